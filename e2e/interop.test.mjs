// Interop test: the official MCP TypeScript SDK client drives the real
// promcp-device binary on the simulated greenhouse, over stdio and over
// streamable HTTP. Every structured result is validated against the tool's
// declared outputSchema (the SDK does it too; we do it explicitly with Ajv).
//
//   PROMCP_BIN=../bin/promcp-device node --test interop.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const bin = path.resolve(process.env.PROMCP_BIN ?? path.join(root, 'bin/promcp-device'));
const manifest = path.join(root, 'manifests/examples/greenhouse.yml');

const wantTools = [
  'can_do', 'do_set_fan_speed', 'do_set_heater', 'do_set_vent', 'read_fan_running',
  'read_fan_speed', 'read_fan_speed_setpoint', 'read_heater', 'read_humidity_zone1', 'read_humidity_zone2',
  'read_site_energy', 'read_site_power', 'read_temperature_zone1', 'read_temperature_zone2', 'read_vent',
];

// The seed's provenance envelope: exactly these keys, wherever it goes.
const toulminKeys = ['claim', 'grounds', 'qualifier', 'rebuttal', 'warrant'];
const tagKeys = ['bucket', 'check', 'freshness', 'origin'];

function checkEnvelope(name, env, where) {
  assert.equal(env?._tool, name, `${name}: _tool in ${where}`);
  assert.deepEqual(Object.keys(env._toulmin).sort(), toulminKeys, `${name}: _toulmin keys in ${where}`);
  assert.deepEqual(Object.keys(env._tags).sort(), tagKeys, `${name}: _tags keys in ${where}`);
  assert.equal(typeof env._toulmin.claim, 'string');
  assert.ok(Array.isArray(env._toulmin.rebuttal));
}

// resolveReferences checks that the envelope's warrant comes by reference
// (the tool's standing part, published once) and that the reference
// resolves: resources/read returns text whose sha256 is the digest the
// result and tools/list give, for this tool.
async function resolveReferences(client, name, env, digests, texts) {
  const ref = env._toulmin.warrant;
  assert.equal(ref.ref, `promcp://warrant/${name}`, `${name}: the warrant by reference`);
  assert.equal(ref.digest, digests.get(ref.ref), `${name}: the reference's digest is tools/list's`);
  if (!texts.has(ref.ref)) {
    const { contents } = await client.readResource({ uri: ref.ref });
    texts.set(ref.ref, contents[0].text);
  }
  const text = texts.get(ref.ref);
  assert.equal('sha256:' + createHash('sha256').update(text, 'utf8').digest('hex'), ref.digest, `${name}: the standing part hashes to its digest`);
  const standing = JSON.parse(text);
  assert.equal(standing.tool, name);
  for (const item of env._toulmin.rebuttal) {
    if (item.startsWith('promcp://')) assert.equal(item, `${ref.ref}#rebuttal`, `${name}: a rebuttal reference to its own standing part`);
  }
}

async function exercise(client, placement = 'meta') {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), wantTools);
  const schemas = new Map();
  const digests = new Map();
  const texts = new Map();
  for (const t of tools) {
    const w = t._meta?.['io.promcp/warrant'];
    assert.equal(w?.uri, `promcp://warrant/${t.name}`, `${t.name}: tools/list gives its standing part`);
    digests.set(w.uri, w.digest);
    assert.ok(t.outputSchema, `${t.name} has an outputSchema`);
    assert.equal(t.inputSchema.type, 'object', `${t.name} inputSchema is an object`);
    schemas.set(t.name, ajv.compile(t.outputSchema));
    const a = t.annotations;
    if (t.name.startsWith('do_')) {
      assert.equal(a.readOnlyHint, false, `${t.name} readOnlyHint`);
      assert.equal(a.idempotentHint, true, `${t.name} idempotentHint`);
    } else {
      assert.equal(a.readOnlyHint, true, `${t.name} readOnlyHint`);
      assert.equal(a.destructiveHint, false, `${t.name} destructiveHint`);
      assert.equal(a.idempotentHint, true, `${t.name} idempotentHint`);
    }
  }
  const call = async (name, args) => {
    const res = await client.callTool({ name, arguments: args });
    const validate = schemas.get(name);
    assert.ok(validate(res.structuredContent), `${name} result fits its outputSchema: ${JSON.stringify(validate.errors)}`);
    assert.equal(res.content[0].type, 'text');
    assert.deepEqual(JSON.parse(res.content[0].text), res.structuredContent, `${name} text copy equals structuredContent`);
    const prov = res._meta?.['io.promcp/provenance'];
    assert.equal(prov?.tool, name, `${name} result is stamped with its provenance in _meta`);
    assert.equal(prov.placement, placement);
    if (placement === 'inline') {
      checkEnvelope(name, res.structuredContent, 'the body');
      await resolveReferences(client, name, res.structuredContent, digests, texts);
      assert.equal(prov._toulmin, undefined, `${name}: the envelope is not in _meta too`);
      assert.ok(schemas.get(name).schema.properties._toulmin, `${name}: the outputSchema declares _toulmin`);
    } else {
      checkEnvelope(name, prov, '_meta');
      await resolveReferences(client, name, prov, digests, texts);
      assert.equal(res.structuredContent._toulmin, undefined, `${name}: the body is the contract's alone`);
    }
    return res;
  };

  const r = await call('read_temperature_zone1', {});
  assert.equal(r.isError ?? false, false);
  assert.equal(r.structuredContent.quality, 'good');
  assert.equal(r.structuredContent.unit, '°C');
  assert.equal(typeof r.structuredContent.value, 'number');

  const key = `ts-${Date.now()}-${Math.random()}`;
  const first = await call('do_set_heater', { value: true, idempotency_key: key });
  assert.equal(first.structuredContent.status, 'success');
  assert.equal(first.structuredContent.applied_value, true);
  const again = await call('do_set_heater', { value: true, idempotency_key: key });
  assert.equal(again.structuredContent.replayed, true);
  assert.equal(again.structuredContent.timestamp, first.structuredContent.timestamp);
  const conflict = await call('do_set_heater', { value: false, idempotency_key: key });
  assert.equal(conflict.isError, true);
  assert.equal(conflict.structuredContent.error.code, 'idempotency_conflict');

  const bad = await call('do_set_heater', { value: 'hot' });
  assert.equal(bad.isError, true);
  assert.equal(bad.structuredContent.status, 'failed');
  assert.equal(bad.structuredContent.error.code, 'invalid_argument');

  const report = await call('can_do', { intent: { semantic_tags: ['heating'], action: 'turn on heater', value: true } });
  assert.equal(report.structuredContent.feasible, true);
  assert.equal(report.structuredContent.candidates[0].capability, 'do_set_heater');
  assert.ok(report.structuredContent.candidates[0].valid_until);

  await call('do_set_heater', { value: false });

  // Modbus: the energy meter over TCP, the fan VFD over RTU on a pty.
  const power = await call('read_site_power', {});
  assert.equal(power.structuredContent.quality, 'good');
  assert.equal(power.structuredContent.unit, 'W');
  const fan = await call('do_set_fan_speed', { value: 12.5 });
  assert.equal(fan.structuredContent.status, 'success');
  assert.equal(fan.structuredContent.applied_value, 12.5);
  const sp = await call('read_fan_speed_setpoint', {});
  assert.equal(sp.structuredContent.value, 12.5);
}

test('TypeScript SDK client over stdio', async () => {
  const transport = new StdioClientTransport({
    command: bin,
    args: ['serve', '--sim', '--manifest', manifest, '--log-level', 'warn'],
    stderr: 'inherit',
  });
  const client = new Client({ name: 'promcp-e2e', version: '1.0.0' });
  await client.connect(transport);
  try {
    await exercise(client);
  } finally {
    await client.close();
  }
});

test('TypeScript SDK client over stdio, provenance inline', async () => {
  const transport = new StdioClientTransport({
    command: bin,
    args: ['serve', '--sim', '--manifest', manifest, '--log-level', 'warn', '--provenance', 'inline'],
    stderr: 'inherit',
  });
  const client = new Client({ name: 'promcp-e2e', version: '1.0.0' });
  await client.connect(transport);
  try {
    await exercise(client, 'inline');
  } finally {
    await client.close();
  }
});

test('TypeScript SDK client over streamable HTTP', async () => {
  const proc = spawn(bin, ['serve', '--sim', '--manifest', manifest, '--http', '127.0.0.1:0', '--log-level', 'warn'],
    { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    let out = '';
    const url = await new Promise((resolve, reject) => {
      proc.stdout.on('data', (d) => {
        out += d;
        const m = out.match(/on (http:\/\/\S+\/mcp)/);
        if (m) resolve(m[1]);
      });
      proc.on('exit', (code) => reject(new Error(`server exited with ${code}: ${out}`)));
    });
    const client = new Client({ name: 'promcp-e2e', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(url));
    await client.connect(transport);
    try {
      await exercise(client);
      // A session the client deleted answers 404.
      const sid = transport.sessionId;
      assert.ok(sid, 'the server issued a session id');
      await transport.terminateSession();
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
      });
      assert.equal(res.status, 404);
    } finally {
      await client.close();
    }
    // A browser page from a foreign origin is refused.
    const foreign = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', origin: 'https://evil.example' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }),
    });
    assert.equal(foreign.status, 403);
  } finally {
    proc.kill('SIGTERM');
    await once(proc, 'exit');
  }
});
