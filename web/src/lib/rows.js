// A table body's rows, or its empty state as the page first had it: a new time range that holds
// no rows must not leave the previous range's rows standing.
const emptyStates = new Map();

export function fillRows(tbody, rowsHtml) {
  if (!emptyStates.has(tbody)) emptyStates.set(tbody, tbody.innerHTML);
  tbody.innerHTML = rowsHtml || emptyStates.get(tbody);
}
