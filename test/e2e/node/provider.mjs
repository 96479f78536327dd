// The end-to-end tests' second certified provider: panva's oidc-provider
// (OpenID Certified), configured as strict providers are. Run by
// test/e2e/stack_test.go from a folder whose node_modules is the one
// test/e2e/run.sh installed (ESM resolves packages from the script's folder).
//
//   - PKCE required (S256), consent before offline_access (the authorization
//     endpoint drops offline_access unless prompt=consent), refresh tokens
//     rotated at every use with reuse detection (a consumed refresh token
//     presented again revokes the whole grant), RFC 7009 revocation, RFC 8628
//     device flow, RFC 7662 introspection;
//   - the people's public native client "kubectl-impersonate" (any loopback
//     port, RFC 8252), and a robot registered without a secret: RFC 7523
//     private_key_jwt with the public keys in $ROBOT_JWKS, client
//     credentials only, whose access token is a JWT for the audience
//     "kubernetes" (RFC 8707 resource indicators).
//
// Environment: ISSUER (the URL clients use: the tests' counting proxy),
// PORT (127.0.0.1), TLS_CERT and TLS_KEY (PEM), ROBOT_JWKS, USERS (JSON:
// email -> {groups}), TTL (seconds of ID and access tokens).
import fs from 'node:fs';
import https from 'node:https';
import crypto from 'node:crypto';
import Provider, { errors } from 'oidc-provider';

const env = (k) => {
  if (!process.env[k]) throw new Error(`${k} is not set`);
  return process.env[k];
};
const ISSUER = env('ISSUER');
const TTL = Number(env('TTL'));
const RESOURCE = 'https://kubernetes.default.svc';
const users = JSON.parse(env('USERS'));

const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const signing = { ...privateKey.export({ format: 'jwk' }), kid: crypto.randomUUID(), use: 'sig', alg: 'RS256' };

const provider = new Provider(ISSUER, {
  jwks: { keys: [signing] },
  clients: [
    {
      client_id: 'kubectl-impersonate', application_type: 'native', token_endpoint_auth_method: 'none',
      // native + http loopback: any port (RFC 8252 §7.3); the path must match.
      redirect_uris: ['http://localhost', 'http://127.0.0.1', 'http://localhost/', 'http://127.0.0.1/'],
      grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
      response_types: ['code'],
    },
    {
      client_id: 'robot', token_endpoint_auth_method: 'private_key_jwt',
      jwks: JSON.parse(fs.readFileSync(env('ROBOT_JWKS'), 'utf8')),
      grant_types: ['client_credentials'], response_types: [], redirect_uris: [],
    },
  ],
  async findAccount(ctx, id) {
    const u = users[id];
    if (!u) return undefined;
    return { accountId: id, async claims() { return { sub: id, email: id, email_verified: true, groups: u.groups }; } };
  },
  claims: { openid: ['sub'], email: ['email', 'email_verified'], groups: ['groups'] },
  scopes: ['openid', 'offline_access', 'email', 'groups'],
  // With the default (true), scope claims stay out of ID tokens issued
  // with an access token: the API server maps email and groups from the ID token.
  conformIdTokenClaims: false,
  pkce: { required: () => true },
  rotateRefreshToken: true,
  features: {
    devInteractions: { enabled: true }, // its login (any password) and consent pages
    deviceFlow: { enabled: true },
    revocation: { enabled: true },
    introspection: { enabled: true },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: (ctx) => (ctx.oidc.params?.grant_type === 'client_credentials' ? RESOURCE : undefined),
      useGrantedResource: () => false,
      getResourceServerInfo: (ctx, resource, client) => {
        if (resource !== RESOURCE || client.clientId !== 'robot') throw new errors.InvalidTarget();
        return { scope: 'cluster', audience: 'kubernetes', accessTokenFormat: 'jwt', accessTokenTTL: TTL, jwt: { sign: { alg: 'RS256' } } };
      },
    },
  },
  ttl: {
    AccessToken: TTL, IdToken: TTL, ClientCredentials: TTL, AuthorizationCode: 60, DeviceCode: 600,
    RefreshToken: 24 * 3600, Interaction: 3600, Session: 24 * 3600, Grant: 24 * 3600,
  },
  clockTolerance: 15, // seconds; bounds the client assertion's exp too
  cookies: { keys: [crypto.randomBytes(32).toString('hex')] },
  renderError(ctx, out) { ctx.type = 'json'; ctx.body = out; },
});
provider.proxy = false;
for (const ev of ['grant.success', 'grant.error', 'grant.revoked', 'server_error', 'revocation.error', 'introspection.error']) {
  provider.on(ev, (ctx, a) => {
    const detail = a instanceof Error ? `${a.message}: ${a.error_description ?? ''} ${a.error_detail ?? ''}` : (a ?? '');
    console.error(`${new Date().toISOString()} [${ev}] ${ctx?.oidc?.params?.grant_type ?? ''} ${detail}`);
  });
}
https.createServer({ cert: fs.readFileSync(env('TLS_CERT')), key: fs.readFileSync(env('TLS_KEY')) }, provider.callback())
  .listen(Number(env('PORT')), '127.0.0.1', () => console.error(`oidc-provider ${ISSUER} ready`));
