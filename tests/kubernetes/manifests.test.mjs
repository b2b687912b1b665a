// The Kubernetes node agent (docker/helm/perfscope, docker/kubernetes): what the Helm chart renders
// with its defaults and with a second value set (tests/kubernetes/values-second.yaml, through
// scripts/render_chart.sh: Helm's template engine and functions, as Helm cannot be installed
// here), and what kubectl's kustomize renders from the base (the chart's defaults, rendered) and
// the overlays, is valid against the Kubernetes and Prometheus Operator schemas, holds to
// least privilege (what docker/kubernetes/daemonset.yaml says it needs and nothing more), its
// alert rules pass promtool and name only metrics perfscope exports, and the DaemonSet's own
// arguments and environment start a real server that is ready, refuses /metrics without a token
// and serves it with the read token from the Secret.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startPerfscope } from '../support/perfscope_server.mjs';
import { unknownFields } from './strict_fields.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const modules = path.join(root, 'web', 'node_modules');
const load = (p) => import(pathToFileURL(path.join(modules, p)).href);
const YAML = await load('yaml/dist/index.js');

function renderChart(...args) {
  const r = spawnSync(path.join(root, 'scripts/render_chart.sh'), args, { encoding: 'utf8' });
  assert.equal(r.status, 0, `render_chart.sh ${args.join(' ')}: ${r.stderr}`);
  return r;
}
const docs = (text) => YAML.parseAllDocuments(text).map((d) => d.toJS()).filter(Boolean);

function render(dir) {
  const r = spawnSync('kubectl', ['kustomize', path.join(root, dir)], { encoding: 'utf8' });
  assert.equal(r.status, 0, `kubectl kustomize ${dir}: ${r.stderr}`);
  return YAML.parseAllDocuments(r.stdout).map((d) => d.toJS()).filter(Boolean);
}

// The model of each kind, from kubernetes-models (core and apps) and its Prometheus Operator set.
function modelPath(apiVersion, kind) {
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : [null, apiVersion];
  if (group === 'monitoring.coreos.com') return `@kubernetes-models/prometheus-operator/${group}/${version}/${kind}`;
  return `kubernetes-models/${group ? group + '/' : ''}${version}/${kind}`;
}
async function modelOf(apiVersion, kind) {
  return (await load(modelPath(apiVersion, kind) + '.js'))[kind];
}
// Keys its kind does not declare, as `kubectl apply --validate=strict` refuses them.
const strictProblems = (doc) => unknownFields(doc, path.join(modules, modelPath(doc.apiVersion, doc.kind) + '.d.ts'), modules);

const base = render('docker/kubernetes/base');
const profiling = render('docker/kubernetes/gpm-profiling');
const podIdentity = render('docker/kubernetes/pod-identity');
const chart = docs(renderChart().stdout);
const second = docs(renderChart('-f', path.join(root, 'tests/kubernetes/values-second.yaml')).stdout);
const example = docs(readFileSync(path.join(root, 'docker/kubernetes/examples/traced-pytorch.yaml'), 'utf8'));
const withoutNamespace = (d) => { const c = structuredClone(d); delete c.metadata.namespace; return c; };
const find = (docs, kind, name) => docs.find((d) => d.kind === kind && (!name || d.metadata.name === name));
const container = (docs) => find(docs, 'DaemonSet').spec.template.spec.containers[0];

test('every object of the chart (both value sets), the base and the overlays validates against its schema', async () => {
  assert.deepEqual(base.map((d) => d.kind).sort(),
                   ['ConfigMap', 'DaemonSet', 'Namespace', 'PrometheusRule', 'Service', 'Service', 'ServiceAccount', 'ServiceMonitor']);
  assert.deepEqual(second.map((d) => d.kind).sort(),
                   ['DaemonSet', 'Ingress', 'PodMonitor', 'PrometheusRule', 'Service', 'Service', 'ServiceAccount']);
  const invalid = [];
  for (const doc of [...chart, ...second, ...base, ...profiling, ...podIdentity, ...example]) {
    const Model = await modelOf(doc.apiVersion, doc.kind);
    try {
      new Model(doc).validate();
    } catch (e) {
      invalid.push(`${doc.kind}/${doc.metadata.name}: ${e.message}`);
    }
    for (const p of strictProblems(doc)) invalid.push(`${doc.kind}/${doc.metadata.name}: ${p}`);
  }
  assert.deepEqual(invalid, []);
  // A schema that accepts anything would pass the above: it refuses a DaemonSet without containers.
  const DaemonSet = await modelOf('apps/v1', 'DaemonSet');
  const broken = structuredClone(find(base, 'DaemonSet'));
  broken.spec.template.spec.containers = 'perfscope';
  assert.throws(() => new DaemonSet(broken).validate());
  // A misspelled field is refused too, at any depth, in core kinds and the Operator's.
  const misspelled = structuredClone(find(second, 'DaemonSet'));
  const c = misspelled.spec.template.spec.containers[0];
  c.readinesProbe = c.readinessProbe;
  delete c.readinessProbe;
  c.volumeMounts[0].readonly = true;
  misspelled.spec.template.spec.hostPid = true;
  assert.deepEqual(strictProblems(misspelled).sort(), ['spec.template.spec.containers[0].readinesProbe: no such field',
                                                       'spec.template.spec.containers[0].volumeMounts[0].readonly: no such field',
                                                       'spec.template.spec.hostPid: no such field']);
  const badMonitor = structuredClone(find(second, 'PodMonitor'));
  badMonitor.spec.podMetricsEndpoints[0].relabelings[0].sourceLabel = ['x'];
  badMonitor.metadata.label = {};
  assert.deepEqual(strictProblems(badMonitor).sort(), ['metadata.label: no such field',
                                                       'spec.podMetricsEndpoints[0].relabelings[0].sourceLabel: no such field']);
});

test('the kustomize base is the chart with its defaults, and the overlays are its options', () => {
  const committed = readFileSync(path.join(root, 'docker/kubernetes/base/perfscope.yaml'), 'utf8');
  assert.equal(docs(committed).length, chart.length);
  const ordered = (objects) => [...objects].sort((x, y) => `${x.kind}/${x.metadata.name}`.localeCompare(`${y.kind}/${y.metadata.name}`));
  assert.deepEqual(ordered(base.filter((d) => d.kind !== 'Namespace').map(withoutNamespace)), ordered(chart),
                   'docker/kubernetes/base/perfscope.yaml is stale: scripts/render_chart.sh --write-base');
  const ds = (objects) => find(objects, 'DaemonSet').spec.template.spec;
  const asChart = (values) => ds(docs(renderChart('-f', values).stdout));
  const dir = mkdtempSync(path.join(tmpdir(), 'perfscope-values-'));
  try {
    writeFileSync(path.join(dir, 'gpm.yaml'), 'gpmProfiling: true\n');
    writeFileSync(path.join(dir, 'pods.yaml'), 'podIdentity:\n  enabled: true\n');
    assert.deepEqual(ds(profiling), asChart(path.join(dir, 'gpm.yaml')));
    const overlay = ds(podIdentity), fromChart = asChart(path.join(dir, 'pods.yaml'));
    const byName = (list) => Object.fromEntries(list.map((x) => [x.name, x]));
    assert.deepEqual(overlay.securityContext, fromChart.securityContext);
    assert.deepEqual(byName(overlay.volumes), byName(fromChart.volumes));
    assert.deepEqual(byName(overlay.containers[0].env), byName(fromChart.containers[0].env));
    assert.deepEqual(byName(overlay.containers[0].volumeMounts), byName(fromChart.containers[0].volumeMounts));
    assert.deepEqual(overlay.initContainers ?? [], fromChart.initContainers ?? []);
    // A value outside what the chart knows fails the render, naming it.
    writeFileSync(path.join(dir, 'bad.yaml'), 'storage:\n  type: nfs\n');
    const bad = spawnSync(path.join(root, 'scripts/render_chart.sh'), ['-f', path.join(dir, 'bad.yaml')], { encoding: 'utf8' });
    assert.notEqual(bad.status, 0);
    assert.match(bad.stderr, /storage\.type must be hostPath or emptyDir/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the second value set: its image, emptyDir storage, pod identity with GPM, a PodMonitor, an Ingress with TLS', () => {
  const pod = find(second, 'DaemonSet').spec.template.spec;
  const c = pod.containers[0];
  assert.equal(c.image, 'registry.example.com/gpu/perfscope:0.1.0-rc1');
  assert.equal(pod.runtimeClassName, undefined);
  assert.deepEqual(pod.volumes.find((v) => v.name === 'data'), { name: 'data', emptyDir: { sizeLimit: '4Gi' } });
  assert.deepEqual(c.securityContext.capabilities, { add: ['SYS_ADMIN'], drop: ['ALL'] });
  assert.equal(pod.securityContext.runAsUser, 0);
  assert.ok(c.args.includes('--gpu-process-interval-ms=500'));
  assert.equal(c.env.find((e) => e.name === 'PERFSCOPE_POD_RESOURCES_SOCKET').value, '/var/lib/kubelet/pod-resources/kubelet.sock');
  const monitor = find(second, 'PodMonitor');
  assert.equal(monitor.metadata.labels.release, 'kube-prometheus-stack');
  for (const [k, v] of Object.entries(monitor.spec.selector.matchLabels)) assert.equal(find(second, 'DaemonSet').spec.template.metadata.labels[k], v);
  assert.equal(monitor.spec.podMetricsEndpoints[0].port, c.ports[0].name);
  assert.equal(monitor.spec.podMetricsEndpoints[0].authorization.credentials.key, 'read');
  const ingress = find(second, 'Ingress');
  assert.equal(ingress.spec.rules[0].host, 'gpu-node-1.example.com');
  assert.equal(ingress.spec.tls[0].secretName, 'perfscope-tls');
  assert.equal(ingress.spec.rules[0].http.paths[0].backend.service.name, find(second, 'Service', 'perfscope').metadata.name);
  assert.match(JSON.stringify(find(second, 'PrometheusRule').spec), /perfscope_inference_request_duration_seconds_bucket\[5m\]\)\)\) > 2/);
  // The default set's dashboard ConfigMap holds the Grafana dashboard whole, for the sidecar.
  const dashboard = find(chart, 'ConfigMap');
  assert.equal(dashboard.metadata.labels.grafana_dashboard, '1');
  assert.deepEqual(JSON.parse(dashboard.data['perfscope.json']),
                   JSON.parse(readFileSync(path.join(root, 'docker/grafana/dashboards/perfscope.json'), 'utf8')));
});

test('the agent holds least privilege: host pids and read-only host /proc and /sys, no capability but in the overlay', () => {
  const ds = find(base, 'DaemonSet');
  const pod = ds.spec.template.spec;
  const c = container(base);
  assert.equal(pod.hostPID, true);
  assert.equal(pod.automountServiceAccountToken, false);
  assert.equal(find(base, 'ServiceAccount').automountServiceAccountToken, false);
  assert.equal(pod.securityContext.runAsNonRoot, true);
  // The image's user (docker/Dockerfile's useradd --uid).
  const uid = Number(readFileSync(path.join(root, 'docker/Dockerfile'), 'utf8').match(/useradd[^\n]*--uid (\d+)/)[1]);
  assert.equal(pod.securityContext.runAsUser, uid);
  assert.equal(c.securityContext.privileged, false);
  assert.equal(c.securityContext.allowPrivilegeEscalation, false);
  assert.equal(c.securityContext.readOnlyRootFilesystem, true);
  assert.deepEqual(c.securityContext.capabilities, { drop: ['ALL'] });
  // The hostPath folder the kubelet creates is root's: a first step hands it to the agent's user,
  // with CAP_CHOWN alone; an emptyDir (fsGroup applies) needs none.
  const owner = pod.initContainers.find((i) => i.name === 'data-owner');
  assert.deepEqual(owner.command, ['chown', '-R', `${uid}:${uid}`, '/data']);
  assert.deepEqual(owner.securityContext.capabilities, { drop: ['ALL'], add: ['CHOWN'] });
  assert.equal(owner.volumeMounts[0].name, 'data');
  assert.equal(find(second, 'DaemonSet').spec.template.spec.initContainers, undefined);
  assert.deepEqual(container(profiling).securityContext.capabilities, { add: ['SYS_ADMIN'], drop: ['ALL'] });
  // Pod identity: root for the kubelet's root-only socket, with no capability; the socket's
  // folder read-only, and the server pointed at the socket in it.
  const identity = find(podIdentity, 'DaemonSet').spec.template.spec;
  assert.equal(identity.securityContext.runAsUser, 0);
  assert.deepEqual(container(podIdentity).securityContext, c.securityContext);
  const socketMount = container(podIdentity).volumeMounts.find((m) => m.name === 'pod-resources');
  assert.equal(socketMount.readOnly, true);
  assert.equal(identity.volumes.find((v) => v.name === 'pod-resources').hostPath.path, '/var/lib/kubelet/pod-resources');
  const socket = container(podIdentity).env.find((e) => e.name === 'PERFSCOPE_POD_RESOURCES_SOCKET').value;
  assert.equal(path.dirname(socket), socketMount.mountPath);
  assert.deepEqual(container(podIdentity).volumeMounts.filter((m) => !m.readOnly).map((m) => m.mountPath).sort(), ['/data', '/tmp']);
  for (const [name, host, mount] of [['host-proc', '/proc', '/host/proc'], ['host-sys', '/sys', '/host/sys']]) {
    assert.equal(pod.volumes.find((v) => v.name === name).hostPath.path, host);
    const m = c.volumeMounts.find((v) => v.name === name);
    assert.equal(m.mountPath, mount);
    assert.equal(m.readOnly, true, `${host} is mounted read-only`);
  }
  assert.ok(c.args.includes('--procfs=/host/proc') && c.args.includes('--sysfs=/host/sys'));
  // Every writable path is a volume: the database and the temporary files.
  assert.deepEqual(c.volumeMounts.filter((m) => !m.readOnly).map((m) => m.mountPath).sort(), ['/data', '/tmp']);
  assert.equal(c.livenessProbe.httpGet.path, '/healthz');
  assert.equal(c.readinessProbe.httpGet.path, '/readyz');
  assert.ok(c.resources.requests.cpu && c.resources.requests.memory && c.resources.limits.memory);
  // Prometheus finds the agents: the monitor selects the service, which selects the pods, by a port it has.
  const svc = find(base, 'Service', 'perfscope');
  const sm = find(base, 'ServiceMonitor');
  for (const [k, v] of Object.entries(sm.spec.selector.matchLabels)) assert.equal(svc.metadata.labels[k], v);
  for (const [k, v] of Object.entries(svc.spec.selector)) assert.equal(ds.spec.template.metadata.labels[k], v);
  assert.ok(svc.spec.ports.some((p) => p.name === sm.spec.endpoints[0].port));
  assert.equal(sm.spec.endpoints[0].bearerTokenSecret.name,
               c.env.find((e) => e.name === 'PERFSCOPE_READ_TOKEN').valueFrom.secretKeyRef.name);
});

test('the alert rules pass promtool and name only metrics perfscope exports', () => {
  const rule = find(base, 'PrometheusRule');
  const dir = mkdtempSync(path.join(tmpdir(), 'perfscope-rules-'));
  try {
    const file = path.join(dir, 'rules.yaml');
    writeFileSync(file, YAML.stringify({ groups: rule.spec.groups }));
    const r = spawnSync('promtool', ['check', 'rules', file], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stdout + r.stderr);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const documented = new Set([...readFileSync(path.join(root, 'docs/metrics.md'), 'utf8').matchAll(/^\| `([a-z_:]+)` \|/gm)].map((m) => m[1]));
  const used = rule.spec.groups.flatMap((g) => g.rules.flatMap((r) => [...r.expr.matchAll(/\b(perfscope_[a-z0-9_]+)/g)].map((m) => m[1])));
  assert.ok(used.length >= 8, `${used.length} metric references`);
  const unknown = used.filter((m) => !documented.has(m) && !documented.has(m.replace(/_(bucket|sum|count)$/, '')));
  assert.deepEqual(unknown, [], 'metrics the rules name that docs/metrics.md does not list');
});

test('the DaemonSet\'s own arguments and environment start a ready server that wants the Secret\'s read token', async () => {
  const c = container(base);
  const tokens = { read: 'r'.repeat(32), write: 'w'.repeat(32) };
  const env = {};
  for (const e of c.env) {
    if (e.valueFrom) env[e.name] = tokens[e.valueFrom.secretKeyRef.key];
    else env[e.name] = e.value;
  }
  env.PERFSCOPE_LISTEN = '127.0.0.1:0';  // a free loopback port here, not the pod's 0.0.0.0:8080
  const data = mkdtempSync(path.join(tmpdir(), 'perfscope-agent-'));
  env.PERFSCOPE_DATA_DIR = data;
  // The pod's /host/proc and /host/sys are this machine's own.
  const args = c.args.slice(1).map((a) => a.replace('/host/proc', '/proc').replace('/host/sys', '/sys'));
  const server = await startPerfscope({ label: 'agent', dataDir: data, env, args });
  try {
    let ready;
    for (let i = 0; i < 50 && ready?.status !== 200; i++) {
      ready = await fetch(server.url + c.readinessProbe.httpGet.path);
      if (ready.status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(ready.status, 200, await ready.text());
    assert.equal((await fetch(server.url + c.livenessProbe.httpGet.path)).status, 200);
    assert.equal((await fetch(server.url + '/metrics')).status, 401);
    const metrics = await fetch(server.url + '/metrics', { headers: { Authorization: `Bearer ${tokens.read}` } });
    assert.equal(metrics.status, 200);
    assert.match(await metrics.text(), /^perfscope_build_info/m);
    const info = await (await fetch(server.url + '/api/v1/info', { headers: { Authorization: `Bearer ${tokens.read}` } })).json();
    assert.equal(info.runtime.retention.raw_max_age_s, 15 * 86400, 'the retention the DaemonSet sets');
    assert.equal(info.runtime.retention.max_bytes, 10e9);
  } finally {
    await server.stop();
    rmSync(data, { recursive: true, force: true });
  }
});

// The recipe for tracing a program in its own pod: the relay sidecar's arguments are what
// `perfscope relay` takes (the real binary parses them), its socket and library are where the
// program's environment says, and its server is the chart's node-local Service.
test('the traced-pod example: a relay sidecar the program finds through its environment', () => {
  const pod = find(example, 'Pod').spec;
  const sidecar = pod.initContainers[0], program = pod.containers[0];
  assert.equal(sidecar.restartPolicy, 'Always');  // a native sidecar: up before the program, for the pod's life
  const envOf = (c, name) => c.env.find((e) => e.name === name);
  const arg = (name) => sidecar.args.find((a) => a.startsWith(`--${name}=`)).split('=')[1];
  assert.equal(envOf(program, 'PERFSCOPE_TRACE_SOCKET').value, arg('socket'));
  assert.equal(path.dirname(envOf(program, 'CUDA_INJECTION64_PATH').value), arg('library-into'));
  assert.equal(path.basename(envOf(program, 'CUDA_INJECTION64_PATH').value), 'libperfscope_cupti.so');
  assert.deepEqual(envOf(program, 'PERFSCOPE_RUN_NAME'), envOf(sidecar, 'PERFSCOPE_RUN_NAME'));
  const mountOf = (c) => c.volumeMounts.find((m) => m.name === 'perfscope').mountPath;
  assert.equal(mountOf(sidecar), arg('library-into'));
  assert.equal(mountOf(program), arg('library-into'));
  const local = find(chart, 'Service', 'perfscope-local');
  assert.equal(local.spec.internalTrafficPolicy, 'Local');
  assert.equal(new URL(arg('server')).hostname, `${local.metadata.name}.perfscope.svc`);
  assert.equal(Number(new URL(arg('server')).port), local.spec.ports[0].port);
  // The binary takes these arguments: --help after them parses them and exits 0.
  const r = spawnSync(process.env.PERFSCOPE_BIN, [...sidecar.args, '--help'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /--library-into/);
});
