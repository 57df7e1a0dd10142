// Drives a fastapi-mrtr server with the 2025-era TypeScript SDK client (@modelcontextprotocol/sdk
// 1.x, the client most MCP apps embed), over Streamable HTTP, and prints one JSON summary.
//
//   MCP_TOKEN=<bearer token, optional> node flows.mjs <mcp-url> <suite> [flow,flow,...]
//
// suite "bookshop" runs example_app's place_order, review_book and delete_book; suite "everything"
// runs the conformance fixture's multi-round and multiple-inputs tools (once with a slow answer,
// so the server closes the call's stream and the client must resume it). Each flow opens its own
// session, answers every question the server sends, and ends the session with DELETE. The summary
// holds, per flow, the result, what was asked, every HTTP exchange and every SSE event seen, so
// the pytest side can check both the outcome and the wire. A flow that throws is reported in the
// summary (error), not as a crash: one broken flow must not hide what the others did.

import { readFile } from 'node:fs/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';

const [url, suite, only] = process.argv.slice(2);
const token = process.env.MCP_TOKEN;
if (!url || !['bookshop', 'everything'].includes(suite)) {
  console.error('usage: MCP_TOKEN=<token> node flows.mjs <mcp-url> bookshop|everything [flow,flow,...]');
  process.exit(2);
}

const GREETING = 'Hello from the client model,';
const ROOTS = ['file:///workspace/shop', 'file:///workspace/notes'];

// The answers, by the question's text: the same text whatever id the server gave the request.
const BOOKSHOP_ANSWERS = {
  "Place this order for 2 x 'Dune', 25.00 EUR?": { confirmed: true },
  'Shipping speed?': { speed: 'express', gift_note: 'Happy reading' },
  "How many stars for 'Neuromancer'?": { stars: 2 },
  'Sorry to hear that. What did you not like?': { text: 'The ending' },
  'Publish your 2-star review?': { value: true },
  "Really delete 'Kindred'? This cannot be undone.": { value: true },
  "Place this order for 1 x 'The Left Hand of Darkness', 11.00 EUR?": { confirmed: true },
};
const EVERYTHING_ANSWERS = {
  'What is your name?': { name: 'Ada' },
  'What is your favorite color?': { color: 'teal' },
};

const FLOWS = {
  bookshop: [
    { name: 'place_order', tool: 'place_order', arguments: { book_id: 1, quantity: 2 } },
    { name: 'review_book', tool: 'review_book', arguments: { book_id: 3 } },
    { name: 'delete_book', tool: 'delete_book', arguments: { book_id: 4 } },
    // As the 1.x clients released before 2025-11-25 open their sessions (the SDK accepts the
    // version when the server answers with it): no elicitation mode field, no SSE priming.
    { name: 'place_order_2025_06_18', tool: 'place_order', arguments: { book_id: 2, quantity: 1 }, initializeVersion: '2025-06-18' },
  ],
  everything: [
    { name: 'multi_round', tool: 'test_input_required_result_multi_round', arguments: {} },
    { name: 'multiple_inputs', tool: 'test_input_required_result_multiple_inputs', arguments: {} },
    // The fixture closes a call's stream after 0.5 s (legacy_sse_close_after): answering the first
    // question after 1.2 s makes the client resume with GET + Last-Event-ID to get the second.
    { name: 'multi_round_resumed', tool: 'test_input_required_result_multi_round', arguments: {}, answerDelayMs: 1200 },
  ],
};

/** The SSE events of a stream: id, event, retry, and the JSON-RPC message of its data, if any. */
async function readEvents(stream, events) {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  const flush = (block) => {
    const event = {};
    const data = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith(':')) continue; // a comment (keep-alive)
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'data') data.push(value);
      else if (field === 'id' || field === 'event' || field === 'retry') event[field] = value;
    }
    if (data.length) event.data = data.join('\n').length; // a priming event has an empty data line
    if (event.data) {
      const message = JSON.parse(data.join('\n'));
      event.message = { id: message.id, method: message.method, result: 'result' in message, error: message.error };
    }
    if (Object.keys(event).length) events.push(event);
  };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let end;
      while ((end = buffer.search(/\r?\n\r?\n/)) !== -1) {
        flush(buffer.slice(0, end));
        buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, '');
      }
    }
  } catch {
    // the client aborted the stream (closing the session): what was read is kept
  }
}

/** A fetch that records each exchange (and, for SSE answers, a copy of the events) in traffic;
 * with initializeVersion, initialize asks for that protocol version instead of the SDK's latest. */
function recordingFetch(traffic, initializeVersion) {
  return async (input, init = {}) => {
    const headers = new Headers(init.headers ?? {});
    let body = null;
    if (typeof init.body === 'string' && init.body) body = JSON.parse(init.body);
    if (initializeVersion && body?.method === 'initialize') {
      body.params.protocolVersion = initializeVersion;
      init = { ...init, body: JSON.stringify(body) };
    }
    const exchange = {
      http: init.method ?? 'GET',
      rpc: body === null ? null : 'method' in body ? body.method : 'response',
      id: body?.id ?? null,
      params: body?.method === 'initialize' ? body.params : undefined,
      session: headers.get('mcp-session-id'),
      protocolVersion: headers.get('mcp-protocol-version'),
      lastEventId: headers.get('last-event-id'),
      accept: headers.get('accept'),
    };
    traffic.push(exchange);
    const response = await fetch(input, init);
    exchange.status = response.status;
    exchange.contentType = response.headers.get('content-type');
    exchange.mintedSession = response.headers.get('mcp-session-id');
    if (!exchange.contentType?.startsWith('text/event-stream') || !response.body) return response;
    const [forClient, forUs] = response.body.tee();
    exchange.events = [];
    exchange.eventsRead = readEvents(forUs, exchange.events);
    return new Response(forClient, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

async function runFlow(flow) {
  const answers = suite === 'bookshop' ? BOOKSHOP_ANSWERS : EVERYTHING_ANSWERS;
  const traffic = [];
  const asked = [];
  const errors = []; // what the SDK reported while the flow ran
  const closeErrors = []; // and while the session closed (aborting its GET stream is reported too)
  let closing = false;
  const summary = { tool: flow.tool, asked, traffic, errors, closeErrors };
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: recordingFetch(traffic, flow.initializeVersion),
    requestInit: token ? { headers: { Authorization: `Bearer ${token}` } } : undefined,
  });
  const client = new Client(
    { name: 'fastapi-mrtr-legacy-js', version: '1.0.0' },
    { capabilities: { elicitation: { form: {} }, sampling: {}, roots: {} } },
  );
  client.onerror = (error) => (closing ? closeErrors : errors).push(String(error?.message ?? error));
  let delay = flow.answerDelayMs ?? 0;
  client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
    const { message, requestedSchema } = request.params;
    asked.push({
      method: request.method,
      id: extra.requestId,
      message,
      mode: request.params.mode ?? null,
      properties: Object.keys(requestedSchema?.properties ?? {}),
    });
    if (delay) {
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = 0; // only the first answer is slow
    }
    if (!(message in answers)) return { action: 'decline' };
    return { action: 'accept', content: answers[message] };
  });
  client.setRequestHandler(CreateMessageRequestSchema, async (request, extra) => {
    const [first] = request.params.messages;
    asked.push({ method: request.method, id: extra.requestId, message: first?.content?.text ?? null, maxTokens: request.params.maxTokens });
    return { role: 'assistant', content: { type: 'text', text: GREETING }, model: 'canned-1', stopReason: 'endTurn' };
  });
  client.setRequestHandler(ListRootsRequestSchema, async (request, extra) => {
    asked.push({ method: request.method, id: extra.requestId });
    return { roots: ROOTS.map((uri) => ({ uri })) };
  });
  const started = Date.now();
  try {
    await client.connect(transport);
    summary.protocolVersion = transport.protocolVersion ?? null;
    summary.sessionId = transport.sessionId ?? null;
    summary.serverInfo = client.getServerVersion() ?? null;
    // Listing first makes the SDK validate structuredContent against each tool's outputSchema.
    const listed = await client.listTools();
    summary.outputSchema = listed.tools.find((tool) => tool.name === flow.tool)?.outputSchema ?? null;
    summary.result = await client.callTool({ name: flow.tool, arguments: flow.arguments }, undefined, { timeout: 20000 });
    if (flow.tool === 'delete_book') {
      const books = await client.callTool({ name: 'list_books', arguments: {} });
      summary.booksAfter = books.structuredContent?.result?.map((book) => book.id) ?? null;
    }
    closing = true;
    await transport.terminateSession();
    summary.terminated = transport.sessionId === undefined;
  } catch (error) {
    summary.error = String(error?.stack ?? error);
  } finally {
    closing = true;
    summary.seconds = (Date.now() - started) / 1000;
    await client.close().catch(() => {});
    await Promise.all(traffic.map((exchange) => exchange.eventsRead).filter(Boolean));
    for (const exchange of traffic) delete exchange.eventsRead;
  }
  return summary;
}

const sdk = JSON.parse(
  await readFile(new URL('./node_modules/@modelcontextprotocol/sdk/package.json', import.meta.url), 'utf8'),
);
const flows = {};
const chosen = only ? only.split(',') : FLOWS[suite].map((flow) => flow.name);
for (const name of chosen) {
  const flow = FLOWS[suite].find((candidate) => candidate.name === name);
  if (!flow) {
    console.error(`no flow ${name} in suite ${suite}`);
    process.exit(2);
  }
  flows[name] = await runFlow(flow);
}
process.stdout.write(JSON.stringify({ sdkVersion: sdk.version, node: process.version, suite, flows }) + '\n');
