// A 2025-era-only stdio MCP server on the official TypeScript SDK (1.32.2), for testing the
// project's client against a stdio server that knows nothing of the 2026 era: it answers
// `server/discover` as an unknown method (-32601), so a probing client must fall back to
// `initialize`. Its questions (elicitation, sampling, roots) are requests on the pipe.
//
//   JS_MODULES=<folder with node_modules> node legacy_stdio_server.cjs
//
// The SDK is the one installed for tests/legacy_clients, found from JS_MODULES (as
// js_stdio_client.cjs finds it), so this script needs no node_modules of its own.

const path = require('node:path');
const { createRequire } = require('node:module');

const sdk = createRequire(path.join(process.env.JS_MODULES, 'package.json'));
const { McpServer } = sdk('@modelcontextprotocol/sdk/server/mcp.js');
const { StdioServerTransport } = sdk('@modelcontextprotocol/sdk/server/stdio.js');
const z = sdk('zod/v4');

const text = value => ({ content: [{ type: 'text', text: value }] });

const server = new McpServer({ name: 'legacy-stdio-server', version: '1.0.0' }, { capabilities: { logging: {} } });

server.registerTool(
    'place_order',
    { description: 'Place an order after two questions: confirm, then the shipping speed', inputSchema: { item: z.string() } },
    async ({ item }) => {
        const confirm = await server.server.elicitInput({
            message: `Place an order for ${item}?`,
            requestedSchema: { type: 'object', properties: { confirmed: { type: 'boolean' } }, required: ['confirmed'] }
        });
        if (confirm.action !== 'accept' || confirm.content?.confirmed !== true) return text('cancelled');
        const shipping = await server.server.elicitInput({
            message: 'Shipping speed?',
            requestedSchema: {
                type: 'object',
                properties: { speed: { type: 'string', enum: ['standard', 'express'] } },
                required: ['speed']
            }
        });
        if (shipping.action !== 'accept') return text('cancelled');
        return text(`placed ${item}, ${shipping.content.speed}`);
    }
);

server.registerTool('ask_model', { description: "Ask the client's model", inputSchema: { prompt: z.string() } }, async ({ prompt }) => {
    const reply = await server.server.createMessage({
        messages: [{ role: 'user', content: { type: 'text', text: prompt } }],
        maxTokens: 100
    });
    return text(`model said: ${reply.content.type === 'text' ? reply.content.text : reply.content.type}`);
});

server.registerTool('list_my_roots', { description: "The client's roots, comma-separated" }, async () => {
    const { roots } = await server.server.listRoots();
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

server.connect(new StdioServerTransport()).catch(error => {
    console.error('cannot serve on stdio:', error);
    process.exit(1);
});
