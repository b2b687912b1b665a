// The dashboard's views: every panel names the views it belongs to (data-view="gpu energy"), the
// navigation in the header picks one, and the URL keeps it (?view=gpu, beside the time range)
// so a reload or a shared link opens the same view. Overview is a summary: the key figures, the
// host's and GPUs' main charts and the bottlenecks, each linking to its view (panels opt in with
// "overview" among their views).
import { setSearchParams } from './url.js';

export const VIEWS = ['overview', 'host', 'gpu', 'kernels', 'timeline', 'memory', 'serving', 'operators', 'energy',
  'analysis', 'processes', 'runs', 'alerts'];

export function initViews({ onShow }) {
  const nav = document.getElementById('views');
  const state = { view: 'overview' };
  function apply(view, push) {
    state.view = VIEWS.includes(view) ? view : 'overview';
    for (const el of document.querySelectorAll('[data-view]')) {
      el.classList.toggle('off-view', !el.dataset.view.split(' ').includes(state.view));
    }
    for (const a of nav.querySelectorAll('a[data-view-link]')) a.classList.toggle('current', a.dataset.viewLink === state.view);
    document.body.dataset.currentView = state.view;  // the overview's links to views show only there (not data-view: panels carry that)
    markLead();
    if (push) setSearchParams({ view: state.view === 'overview' ? null : state.view }, { push: true });
    if (onShow) onShow(state.view);  // charts shown after being hidden take their width again; views load
  }
  // The first block shown under the navigation keeps the gap a row of figures has: a view that
  // begins with a panel would otherwise touch the navigation bar. Again whenever a block is
  // shown or hidden (the GPU sections appear once the first readings arrive).
  function markLead() {
    const visible = (el) => !el.hidden && !el.classList.contains('off-view');
    // A group of panels none of which belongs to the view takes no room (its padding would
    // push the view's first panel down).
    for (const m of document.querySelectorAll('main:not([data-view])')) {
      m.classList.toggle('off-view', ![...m.children].some(visible));
    }
    let first = null;
    for (let el = nav.nextElementSibling; el; el = el.nextElementSibling) {
      if (!first && visible(el) && (el.tagName !== 'MAIN' || [...el.children].some(visible))) first = el;
      else if (el.classList.contains('lead')) el.classList.remove('lead');
    }
    if (first && !first.classList.contains('lead')) first.classList.add('lead');
  }
  new MutationObserver(markLead).observe(document.body, { attributes: true, attributeFilter: ['hidden'], subtree: true });
  // The navigation, and the overview's figures and panel links: a view without a reload.
  document.addEventListener('click', (e) => {
    const a = e.target.closest('a[data-view-link]');
    if (!a || e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;  // a new tab keeps its link
    e.preventDefault();
    apply(a.dataset.viewLink, true);
    window.scrollTo(0, 0);
  });
  apply(new URLSearchParams(window.location.search).get('view'), false);
  // Back and Forward: the URL's view, without a new entry.
  state.readUrl = () => apply(new URLSearchParams(window.location.search).get('view'), false);
  state.show = (view) => apply(view, true);
  return state;
}
