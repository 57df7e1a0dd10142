// A 2025-era-only MCP server on the official TypeScript SDK (1.32.2), for testing the project's
// client against a server that knows nothing of the 2026 era.
//
//   node legacy_server.mjs PORT
//
// Stateful Streamable HTTP on http://127.0.0.1:PORT/mcp: an `initialize` POST without a session
// opens one (a transport and an McpServer of its own, keyed by the Mcp-Session-Id the transport
// mints); later POSTs, the GET stream and DELETE name it in that header. Every other request
// without a session, `server/discover` included, is refused before any MCP code sees it:
// 400 {"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID
// provided"},"id":null}, the answer of the SDK's own stateful example (a known session id that is
// gone gets 404 with code -32001). Inside a session `server/discover` is an unknown method (-32601).
//
// Prints `READY <port>` once listening; exits when stdin closes (the parent died) or on SIGTERM.
import { randomUUID } from 'node:crypto';
import * as z from 'zod/v4';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0) {
    console.error('usage: node legacy_server.mjs PORT');
    process.exit(2);
}

const text = value => ({ content: [{ type: 'text', text: value }] });

// Server requests made inside a tool call pass the call's id, so the SDK writes them on that
// call's SSE response stream rather than on the session's GET stream.
const onCallStream = extra => ({ relatedRequestId: extra.requestId });

function buildServer() {
    const server = new McpServer({ name: 'legacy-node-server', version: '1.0.0' }, { capabilities: { logging: {} } });

    server.registerTool('echo', { description: 'Echo the text back', inputSchema: { text: z.string() } }, async ({ text: said }) =>
        text(`echo: ${said}`)
    );

    server.registerTool(
        'place_order',
        {
            description: 'Place an order after two questions: confirm, then the shipping speed',
            inputSchema: { item: z.string(), quantity: z.number().int() },
            outputSchema: {
                status: z.enum(['placed', 'cancelled']),
                item: z.string(),
                quantity: z.number().int(),
                speed: z.enum(['standard', 'express']).nullable()
            }
        },
        async ({ item, quantity }, extra) => {
            const outcome = (status, speed, said) => ({
                ...text(said),
                structuredContent: { status, item, quantity, speed }
            });
            const cancelled = () => outcome('cancelled', null, 'cancelled');
            const confirm = await server.server.elicitInput(
                {
                    message: `Place ${quantity} x ${item}?`,
                    requestedSchema: { type: 'object', properties: { confirmed: { type: 'boolean' } }, required: ['confirmed'] }
                },
                onCallStream(extra)
            );
            if (confirm.action !== 'accept' || confirm.content?.confirmed !== true) return cancelled();
            const shipping = await server.server.elicitInput(
                {
                    message: 'Shipping speed?',
                    requestedSchema: {
                        type: 'object',
                        properties: { speed: { type: 'string', enum: ['standard', 'express'] } },
                        required: ['speed']
                    }
                },
                onCallStream(extra)
            );
            if (shipping.action !== 'accept') return cancelled();
            const speed = shipping.content.speed;
            return outcome('placed', speed, `placed ${quantity} x ${item}, ${speed}`);
        }
    );

    server.registerTool('ask_model', { description: "Ask the client's model", inputSchema: { prompt: z.string() } }, async ({ prompt }, extra) => {
        const reply = await server.server.createMessage(
            { messages: [{ role: 'user', content: { type: 'text', text: prompt } }], maxTokens: 100 },
            onCallStream(extra)
        );
        const parts = Array.isArray(reply.content) ? reply.content : [reply.content];
        return text(`model said: ${parts.map(part => (part.type === 'text' ? part.text : JSON.stringify(part))).join('')}`);
    });

    server.registerTool('list_my_roots', { description: "The client's roots, comma-separated" }, async extra => {
        const { roots } = await server.server.listRoots(undefined, onCallStream(extra));
        return text(roots.map(root => root.uri).join(','));
    });

    server.registerTool(
        'slow',
        { description: 'Report progress and a log line per step', inputSchema: { steps: z.number().int() } },
        async ({ steps }, extra) => {
            const progressToken = extra._meta?.progressToken;
            for (let i = 1; i <= steps; i++) {
                if (progressToken !== undefined) {
                    await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress: i, total: steps } });
                }
                await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', data: `step ${i}` } });
            }
            return text('done');
        }
    );

    server.registerPrompt('greet', { description: 'Greet someone', argsSchema: { name: z.string() } }, async ({ name }) => ({
        messages: [{ role: 'user', content: { type: 'text', text: `Hello, ${name}!` } }]
    }));

    server.registerResource('hello', 'res://hello', { mimeType: 'text/plain' }, async uri => ({
        contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'hello' }]
    }));

    return server;
}

const sessions = new Map(); // Mcp-Session-Id -> its transport

const rpcError = (res, status, code, message) => res.status(status).json({ jsonrpc: '2.0', error: { code, message }, id: null });

async function openSession(req, res) {
    const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: sessionId => sessions.set(sessionId, transport)
    });
    transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await buildServer().connect(transport);
    await transport.handleRequest(req, res, req.body);
}

// The session a request names, or undefined after answering it as the SDK's example does.
function sessionOf(req, res) {
    const sessionId = req.headers['mcp-session-id'];
    if (!sessionId) {
        rpcError(res, 400, -32000, 'Bad Request: No valid session ID provided');
        return undefined;
    }
    const transport = sessions.get(sessionId);
    if (!transport) rpcError(res, 404, -32001, 'Session not found');
    return transport;
}

const guarded = handler => async (req, res) => {
    try {
        await handler(req, res);
    } catch (error) {
        console.error('request failed:', error);
        if (!res.headersSent) rpcError(res, 500, -32603, 'Internal server error');
    }
};

const app = createMcpExpressApp({ host: '127.0.0.1' });

app.post(
    '/mcp',
    guarded(async (req, res) => {
        if (!req.headers['mcp-session-id'] && isInitializeRequest(req.body)) {
            await openSession(req, res);
            return;
        }
        const transport = sessionOf(req, res);
        if (transport) await transport.handleRequest(req, res, req.body);
    })
);

for (const method of ['get', 'delete']) {
    app[method](
        '/mcp',
        guarded(async (req, res) => {
            const transport = sessionOf(req, res);
            if (transport) await transport.handleRequest(req, res);
        })
    );
}

const listener = app.listen(port, '127.0.0.1', error => {
    if (error) {
        console.error('cannot listen:', error);
        process.exit(1);
    }
    process.stdout.write(`READY ${port}\n`);
});

let stopping = false;
async function shutdown() {
    if (stopping) return;
    stopping = true;
    for (const transport of sessions.values()) await transport.close().catch(() => {});
    listener.close();
    process.exit(0);
}

process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
// The parent holds our stdin: when it exits (even killed), the pipe closes and so do we.
process.stdin.on('end', shutdown);
process.stdin.on('close', shutdown);
process.stdin.resume();
