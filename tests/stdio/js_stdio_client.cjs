// The TypeScript SDK's stdio client (@modelcontextprotocol/sdk 1.32.2, 2025 era only) launches
// `python -m fastapi_mrtr.stdio $SERVER_APP` and places one order in the bookshop, answering its
// two questions (elicitation/create requests on the pipe). Prints one JSON summary on stdout.
//
//   JS_MODULES=<folder with node_modules> SERVER_PYTHON=<python> SERVER_APP=<module:app> node js_stdio_client.cjs
//
// The SDK is the one installed for tests/legacy_clients (scripts/install-js-client.sh); it is
// found from JS_MODULES, so this script needs no node_modules of its own.

const path = require('node:path');
const { createRequire } = require('node:module');

const sdk = createRequire(path.join(process.env.JS_MODULES, 'package.json'));
const { Client } = sdk('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport, getDefaultEnvironment } = sdk('@modelcontextprotocol/sdk/client/stdio.js');
const { ElicitRequestSchema } = sdk('@modelcontextprotocol/sdk/types.js');

const ANSWERS = {
  "Place this order for 2 x 'Neuromancer', 19.80 EUR?": { confirmed: true },
  'Shipping speed?': { speed: 'express' },
};

async function main() {
  const environment = { ...getDefaultEnvironment() };
  for (const name of ['PYTHONPATH', 'BOOKSHOP_DB', 'MRTR_STATE_KEY', 'MRTR_STDIO_AUTHORIZATION']) {
    if (process.env[name] !== undefined) environment[name] = process.env[name];
  }
  const transport = new StdioClientTransport({
    command: process.env.SERVER_PYTHON,
    args: ['-m', 'fastapi_mrtr.stdio', process.env.SERVER_APP],
    env: environment,
    cwd: process.cwd(),
    stderr: 'inherit',
  });
  let negotiated = null; // the client hands the agreed version to a transport that takes it
  transport.setProtocolVersion = (version) => {
    negotiated = version;
  };
  const client = new Client({ name: 'stdio-test', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  const asked = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params.message);
    const content = ANSWERS[request.params.message];
    return content ? { action: 'accept', content } : { action: 'decline' };
  });
  await client.connect(transport);
  const result = await client.callTool({ name: 'place_order', arguments: { book_id: 3, quantity: 2 } });
  const summary = {
    serverVersion: client.getServerVersion(),
    protocolVersion: negotiated,
    asked,
    result,
  };
  await client.close();
  process.stdout.write(JSON.stringify(summary));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
