// The peer of scripts/perf-compare: the official TypeScript MCP SDK's
// server with one read tool equivalent to the greenhouse's
// read_temperature_zone1 (the same body, a cached value, an output schema
// and structured content), over the SDK's streamable HTTP transport with
// sessions, on a loopback port. Prints its URL. Not part of the tests.
//
//   node perf-peer.mjs
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

let at = 0;
let body;
function reading() {
  const now = Date.now();
  if (now - at >= 2000) {
    at = now;
    body = { value: 21.5, unit: '°C', timestamp: new Date(now).toISOString(), quality: 'good' };
  }
  return body;
}

function newServer() {
  const s = new McpServer({ name: 'peer', version: '1' });
  s.registerTool('read_temperature_zone1', {
    description: 'Air temperature in zone 1.',
    inputSchema: {},
    outputSchema: {
      value: z.number().nullable(),
      unit: z.literal('°C'),
      timestamp: z.string().datetime(),
      quality: z.enum(['good', 'stale', 'degraded', 'error']),
    },
    annotations: { readOnlyHint: true },
  }, async () => {
    const b = reading();
    return { content: [{ type: 'text', text: JSON.stringify(b) }], structuredContent: b };
  });
  return s;
}

const transports = new Map();
const http = createServer(async (req, res) => {
  if (req.url !== '/mcp') { res.writeHead(404).end(); return; }
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const parsed = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
  const id = req.headers['mcp-session-id'];
  let t = id && transports.get(id);
  if (!t) {
    if (req.method !== 'POST' || !isInitializeRequest(parsed)) {
      res.writeHead(id ? 404 : 400).end();
      return;
    }
    t = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sid) => transports.set(sid, t),
    });
    t.onclose = () => t.sessionId && transports.delete(t.sessionId);
    await newServer().connect(t);
  }
  await t.handleRequest(req, res, parsed);
});
http.listen(0, '127.0.0.1', () => {
  console.log(`peer: serving on http://127.0.0.1:${http.address().port}/mcp`);
});
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
