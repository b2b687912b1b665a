// The Kubernetes node agent (docker/kubernetes): what kubectl's kustomize renders from the base
// and the overlay is valid against the Kubernetes and Prometheus Operator schemas, holds to
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

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const modules = path.join(root, 'web', 'node_modules');
const load = (p) => import(pathToFileURL(path.join(modules, p)).href);
const YAML = await load('yaml/dist/index.js');

function render(dir) {
  const r = spawnSync('kubectl', ['kustomize', path.join(root, dir)], { encoding: 'utf8' });
  assert.equal(r.status, 0, `kubectl kustomize ${dir}: ${r.stderr}`);
  return YAML.parseAllDocuments(r.stdout).map((d) => d.toJS()).filter(Boolean);
}

// The model of each kind, from kubernetes-models (core and apps) and its Prometheus Operator set.
async function modelOf(apiVersion, kind) {
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : [null, apiVersion];
  if (group === 'monitoring.coreos.com') return (await load(`@kubernetes-models/prometheus-operator/${group}/${version}/${kind}.js`))[kind];
  return (await load(`kubernetes-models/${group ? group + '/' : ''}${version}/${kind}.js`))[kind];
}

const base = render('docker/kubernetes/base');
const profiling = render('docker/kubernetes/gpm-profiling');
const podIdentity = render('docker/kubernetes/pod-identity');
const find = (docs, kind) => docs.find((d) => d.kind === kind);
const container = (docs) => find(docs, 'DaemonSet').spec.template.spec.containers[0];

test('every object of the base and the overlay validates against its schema', async () => {
  assert.deepEqual(base.map((d) => d.kind).sort(),
                   ['DaemonSet', 'Namespace', 'PrometheusRule', 'Service', 'ServiceAccount', 'ServiceMonitor']);
  const invalid = [];
  for (const doc of [...base, ...profiling, ...podIdentity]) {
    const Model = await modelOf(doc.apiVersion, doc.kind);
    try {
      new Model(doc).validate();
    } catch (e) {
      invalid.push(`${doc.kind}/${doc.metadata.name}: ${e.message}`);
    }
  }
  assert.deepEqual(invalid, []);
  // A schema that accepts anything would pass the above: it refuses a DaemonSet without containers.
  const DaemonSet = await modelOf('apps/v1', 'DaemonSet');
  const broken = structuredClone(find(base, 'DaemonSet'));
  broken.spec.template.spec.containers = 'perfscope';
  assert.throws(() => new DaemonSet(broken).validate());
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
  const svc = find(base, 'Service');
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
