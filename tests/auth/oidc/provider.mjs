// A real OpenID provider (oidc-provider) on 127.0.0.1 for the OAuth tests: `node provider.mjs PORT`.
//
// It issues JWT access tokens for a resource named with RFC 8707 `resource`, signed with the
// provider's keys (its JWKS is found through its discovery document). Two static clients use the
// client credentials grant: `reader` may get `orders:read`, `admin` may get every scope, and
// `opaque-reader` gets `orders:read` as an opaque token, which `introspector` (the resource
// server's own credentials) checks at the RFC 7662 introspection endpoint. Dynamic
// client registration and the authorization code grant with PKCE are on for clients that sign a
// user in; the login and consent pages are the small forms below (tests fill them in; any password
// is taken; the consent form's `decline` field lists scopes the user does not grant, as a person
// unticking a box). Prints `READY PORT` once it listens; exits when its stdin closes (the test
// process ended).
import http from 'node:http';

import Provider from 'oidc-provider';

const port = Number(process.argv[2]);
const issuer = `http://127.0.0.1:${port}`;
const SCOPES = ['orders:read', 'orders:write', 'admin'];

const provider = new Provider(issuer, {
  clients: [
    { client_id: 'reader', client_secret: 'reader-secret', grant_types: ['client_credentials'], redirect_uris: [], response_types: [], token_endpoint_auth_method: 'client_secret_basic', scope: 'orders:read' },
    { client_id: 'opaque-reader', client_secret: 'opaque-secret', grant_types: ['client_credentials'], redirect_uris: [], response_types: [], token_endpoint_auth_method: 'client_secret_basic', scope: 'orders:read' },
    { client_id: 'introspector', client_secret: 'introspector-secret', grant_types: [], redirect_uris: [], response_types: [], token_endpoint_auth_method: 'client_secret_basic' },
    { client_id: 'admin', client_secret: 'admin-secret', grant_types: ['client_credentials'], redirect_uris: [], response_types: [], token_endpoint_auth_method: 'client_secret_basic', scope: SCOPES.join(' ') },
  ],
  scopes: ['openid', 'offline_access', ...SCOPES],
  clientDefaults: { grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' },
  features: {
    devInteractions: { enabled: false }, // the login and consent pages are below
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    registration: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: (ctx, client, oneOf) => oneOf ?? undefined,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resourceIndicator, client) => ({
        scope: SCOPES.join(' '),
        audience: resourceIndicator,
        accessTokenFormat: client.clientId.startsWith('opaque-') ? 'opaque' : 'jwt',
        accessTokenTTL: 300,
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
  // A registered client is not held to the scope it registered with: the MCP client registers with
  // the scopes of its first challenge and asks for more when a 403 steps it up (SEP-2350).
  extraClientMetadata: {
    properties: ['software_statement_note'],
    validator(ctx, key, value, metadata) {
      if (ctx) delete metadata.scope; // ctx is set for dynamic registrations only, not static clients
    },
  },
  pkce: { required: () => true },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  findAccount: (ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
});
provider.proxy = false;

async function formOf(req) {
  let raw = '';
  for await (const chunk of req) raw += chunk;
  return new URLSearchParams(raw);
}

function page(res, uid, prompt, fields) {
  res.setHeader('content-type', 'text/html; charset=utf-8');
  res.end(`<!doctype html><title>${prompt}</title><form method="post" action="/interaction/${uid}">`
    + `<input type="hidden" name="prompt" value="${prompt}"/>${fields}<button type="submit">Continue</button></form>`);
}

async function interaction(req, res) {
  const details = await provider.interactionDetails(req, res);
  const { uid, prompt, params, session } = details;
  if (req.method === 'GET') {
    const fields = prompt.name === 'login' ? '<input name="login"/><input name="password" type="password"/>' : '<input name="decline"/>';
    page(res, uid, prompt.name, fields);
    return;
  }
  const form = await formOf(req);
  if (prompt.name === 'login') {
    await provider.interactionFinished(req, res, { login: { accountId: form.get('login') } }, { mergeWithLastSubmission: false });
    return;
  }
  const accountId = session.accountId;
  const declined = new Set((form.get('decline') ?? '').split(' ').filter(Boolean));
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId, clientId: params.client_id });
  if (prompt.details.missingOIDCScope) grant.addOIDCScope(prompt.details.missingOIDCScope.join(' '));
  for (const [resource, scopes] of Object.entries(prompt.details.missingResourceScopes ?? {})) {
    grant.addResourceScope(resource, scopes.filter((s) => !declined.has(s)).join(' '));
    grant.rejectResourceScope(resource, scopes.filter((s) => declined.has(s)).join(' '));
  }
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

const handle = provider.callback();
const server = http.createServer((req, res) => {
  if (!req.url.startsWith('/interaction/')) return handle(req, res);
  interaction(req, res).catch((error) => {
    res.statusCode = 400;
    res.end(String(error));
  });
});
server.listen(port, '127.0.0.1', () => process.stdout.write(`READY ${port}\n`));
process.stdin.resume();
process.stdin.on('end', () => server.close(() => process.exit(0)));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
