// Runs N concurrent three_answers flows (tests/scaleout/legacy_flow_app.py) with the 2025-era
// TypeScript SDK client, each in its own MCP session, and prints one JSON summary:
//
//   node concurrent_flows.mjs <mcp-url> <count> <prefix>
//
// Each flow answers "Question k for <token>?" with "<token>:k" and reports the tool's structured
// result, or the error it ended with; the pytest side checks every flow got its own answers.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const [url, countText, prefix] = process.argv.slice(2);
const count = Number(countText);

async function flow(index) {
  const token = `${prefix}-${index}`;
  const client = new Client({ name: 'replica-flows', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    const found = /^Question (\d+) for (.+)\?$/.exec(request.params.message);
    return { action: 'accept', content: { value: `${found[2]}:${found[1]}` } };
  });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const started = Date.now();
  try {
    await client.connect(transport);
    const result = await client.callTool({ name: 'three_answers', arguments: { token } }, undefined, { timeout: 120000 });
    return { token, result: result.structuredContent ?? null, isError: result.isError ?? false, ms: Date.now() - started };
  } catch (error) {
    return { token, error: String(error?.message ?? error), ms: Date.now() - started };
  } finally {
    try { await transport.terminateSession(); } catch {}
    try { await client.close(); } catch {}
  }
}

const flows = await Promise.all(Array.from({ length: count }, (_, i) => flow(i)));
console.log(JSON.stringify({ flows }));
