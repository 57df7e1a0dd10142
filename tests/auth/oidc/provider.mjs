// A real OpenID provider (oidc-provider) on 127.0.0.1 for the OAuth tests: `node provider.mjs PORT`.
//
// It issues JWT access tokens for a resource named with RFC 8707 `resource`, signed with the
// provider's keys (its JWKS is found through its discovery document). Two static clients use the
// client credentials grant: `reader` may get `orders:read`, `admin` may get every scope. Dynamic
// client registration and the authorization code grant with PKCE are on for clients that sign a
// user in; the login and consent pages are the provider's own development pages (tests fill them
// in), and every account may be granted every scope. Prints `READY PORT` once it listens; exits
// when its stdin closes (the test process ended).
import Provider from 'oidc-provider';

const port = Number(process.argv[2]);
const issuer = `http://127.0.0.1:${port}`;
const SCOPES = ['orders:read', 'orders:write', 'admin'];

const provider = new Provider(issuer, {
  clients: [
    { client_id: 'reader', client_secret: 'reader-secret', grant_types: ['client_credentials'], redirect_uris: [], response_types: [], token_endpoint_auth_method: 'client_secret_basic', scope: 'orders:read' },
    { client_id: 'admin', client_secret: 'admin-secret', grant_types: ['client_credentials'], redirect_uris: [], response_types: [], token_endpoint_auth_method: 'client_secret_basic', scope: SCOPES.join(' ') },
  ],
  scopes: ['openid', 'offline_access', ...SCOPES],
  clientDefaults: { grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' },
  features: {
    devInteractions: { enabled: true },
    clientCredentials: { enabled: true },
    registration: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: (ctx, client, oneOf) => oneOf ?? undefined,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resourceIndicator) => ({
        scope: SCOPES.join(' '),
        audience: resourceIndicator,
        accessTokenFormat: 'jwt',
        accessTokenTTL: 300,
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
  pkce: { required: () => true },
  findAccount: (ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
  // Consent is given for what the client asked (the tests are the user): the development consent
  // page still shows, and submitting it grants the requested scopes for the requested resource.
  async loadExistingGrant(ctx) {
    const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (grantId) {
      const grant = await ctx.oidc.provider.Grant.find(grantId);
      if (grant) return grant;
    }
    const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    const requested = ctx.oidc.params.scope ? String(ctx.oidc.params.scope).split(' ') : [];
    grant.addOIDCScope(requested.filter((s) => s === 'openid' || s === 'offline_access').join(' '));
    const resource = ctx.oidc.params.resource;
    if (resource) grant.addResourceScope(String(resource), requested.filter((s) => SCOPES.includes(s)).join(' '));
    await grant.save();
    return grant;
  },
});
provider.proxy = false;

const server = provider.listen(port, '127.0.0.1', () => process.stdout.write(`READY ${port}\n`));
process.stdin.resume();
process.stdin.on('end', () => server.close(() => process.exit(0)));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
