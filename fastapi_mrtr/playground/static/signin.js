// The playground's "Sign in" (docs/oauth.md), like /docs' Authorize: OAuth 2.1 authorization code
// with PKCE S256 and the RFC 8707 resource, from the browser, as a public client.
//
// Served only when the endpoint is an OAuth resource server: the page then names the resource's
// metadata (data-oauth-metadata) and, when the server was given one, a client id registered for
// this page (data-oauth-client); without it the page registers itself (RFC 7591). The page is its
// own redirect URI. The state, the PKCE verifier and the token live in sessionStorage: this tab
// only, gone when it closes. Same safety rule as playground.js: no markup from any server.
"use strict";

(() => {
  const data = document.documentElement.dataset;
  const METADATA = data.oauthMetadata || "";
  const CLIENT_ID = data.oauthClient || "";
  const KEY = "fastapi-mrtr-playground-oauth";

  const load = () => {
    try {
      const saved = JSON.parse(sessionStorage.getItem(KEY) || "{}");
      return saved !== null && typeof saved === "object" ? saved : {};
    } catch {
      return {};
    }
  };
  const save = (changes) => sessionStorage.setItem(KEY, JSON.stringify({ ...load(), ...changes }));
  const redirectUri = () => location.origin + location.pathname;

  const b64url = (buffer) =>
    btoa(String.fromCharCode(...new Uint8Array(buffer))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  const random = (size) => b64url(crypto.getRandomValues(new Uint8Array(size)));
  const challengeOf = async (verifier) => b64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));

  async function json(url, init = {}) {
    const response = await fetch(url, { cache: "no-store", credentials: "omit", ...init });
    let body = null;
    try {
      body = await response.json();
    } catch {
      body = null;
    }
    if (!response.ok || body === null || typeof body !== "object") {
      const why = body && (body.error_description || body.error);
      throw new Error(`${url} answered ${why ? String(why) : `HTTP ${response.status}`}`);
    }
    return body;
  }

  // RFC 8414 first, then OpenID discovery; the document must name exactly this issuer.
  async function serverMetadata(issuer) {
    const url = new URL(issuer);
    const path = url.pathname.replace(/\/$/, "");
    const candidates = [
      `${url.origin}/.well-known/oauth-authorization-server${path}`,
      `${url.origin}${path}/.well-known/openid-configuration`,
    ];
    for (const candidate of candidates) {
      let document;
      try {
        document = await json(candidate);
      } catch {
        continue;
      }
      if (document.issuer !== issuer) throw new Error(`the metadata at ${candidate} names another issuer`);
      return document;
    }
    throw new Error(`no authorization server metadata found for ${issuer}`);
  }

  async function discover() {
    const resource = await json(METADATA);
    const issuer = Array.isArray(resource.authorization_servers) ? resource.authorization_servers[0] : null;
    if (typeof issuer !== "string") throw new Error("the resource metadata names no authorization server");
    const server = await serverMetadata(issuer);
    if (!(server.code_challenge_methods_supported || []).includes("S256")) throw new Error(`${issuer} does not offer PKCE S256`);
    return { resource, issuer, server };
  }

  async function clientId(found) {
    if (CLIENT_ID) return CLIENT_ID;
    const known = load().registered;
    if (known && known.issuer === found.issuer && known.redirectUri === redirectUri()) return known.clientId;
    if (!found.server.registration_endpoint) {
      throw new Error(`${found.issuer} offers no client registration: give the server a playground_client_id`);
    }
    const client = await json(found.server.registration_endpoint, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({
        redirect_uris: [redirectUri()],
        client_name: "MCP playground",
        token_endpoint_auth_method: "none",
        grant_types: ["authorization_code"],
        response_types: ["code"],
        application_type: "web",
      }),
    });
    save({ registered: { issuer: found.issuer, redirectUri: redirectUri(), clientId: client.client_id } });
    return client.client_id;
  }

  // Leaves the page for the authorization server. `wanted`: the scopes a challenge named (added to
  // those held already, SEP-2350), or none: every scope the resource lists.
  async function begin(wanted) {
    const found = await discover();
    const held = String(load().scope || "").split(" ").filter(Boolean);
    const asked = wanted.length ? wanted : found.resource.scopes_supported || [];
    const scope = [...new Set([...held, ...asked])].join(" ");
    const id = await clientId(found);
    const verifier = random(32);
    const state = random(16);
    save({
      pending: { state, verifier, clientId: id, issuer: found.issuer, tokenEndpoint: found.server.token_endpoint, resource: found.resource.resource, scope },
    });
    const url = new URL(found.server.authorization_endpoint);
    const params = {
      response_type: "code",
      client_id: id,
      redirect_uri: redirectUri(),
      code_challenge: await challengeOf(verifier),
      code_challenge_method: "S256",
      state,
      resource: found.resource.resource,
    };
    if (scope) params.scope = scope;
    for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
    location.assign(url.href);
  }

  // On load: back from the authorization server, check state and iss, trade the code for a token.
  // Returns the Authorization header value to send ("" when not signed in).
  async function complete() {
    const query = new URLSearchParams(location.search);
    const saved = load();
    if (!query.has("code") && !query.has("error")) return saved.token ? `Bearer ${saved.token}` : "";
    history.replaceState(null, "", location.pathname); // the code does not stay in the address bar
    const pending = saved.pending;
    save({ pending: null });
    if (!pending || query.get("state") !== pending.state) throw new Error("the sign-in answer matches no sign-in this page started");
    if (query.has("iss") && query.get("iss") !== pending.issuer) throw new Error("the sign-in answer came from another issuer");
    if (query.has("error")) throw new Error(`the sign-in failed: ${query.get("error_description") || query.get("error")}`);
    const form = new URLSearchParams({
      grant_type: "authorization_code",
      code: query.get("code"),
      redirect_uri: redirectUri(),
      code_verifier: pending.verifier,
      client_id: pending.clientId,
      resource: pending.resource,
    });
    const token = await json(pending.tokenEndpoint, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: form.toString(),
    });
    if (typeof token.access_token !== "string") throw new Error("the token endpoint answered no access token");
    save({ token: token.access_token, scope: typeof token.scope === "string" ? token.scope : pending.scope });
    return `Bearer ${token.access_token}`;
  }

  function signOut() {
    save({ token: null, scope: null, pending: null });
  }

  // The scope parameter of a Bearer challenge (RFC 6750 §3), as a list.
  function challengedScopes(header) {
    const match = /(?:^|[\s,])scope="([^"]*)"/.exec(String(header || ""));
    return match ? match[1].split(" ").filter(Boolean) : [];
  }

  const scope = () => String(load().scope || "");

  window.mrtrSignIn = METADATA ? Object.freeze({ begin, complete, signOut, challengedScopes, scope }) : null;
})();
