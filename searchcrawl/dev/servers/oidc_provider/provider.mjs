// The OpenID Connect provider of the single sign-on tests (tests/oidc_server.py starts it):
// panva's oidc-provider with its development login (any account name of ACCOUNTS), one client,
// PKCE required, each account's groups in its ID token (the "groups" scope).
// Arguments: port, client_id, redirect URI(s) comma-separated, accounts as JSON, and "conform"
// for the provider's default: the profile's claims at the userinfo endpoint alone. The client's
// secret comes in the environment (OIDC_CLIENT_SECRET): a command line is every local user's to read.
import Provider from 'oidc-provider';

const [port, clientId, redirects, accountsJson, conform] = process.argv.slice(2);
const clientSecret = process.env.OIDC_CLIENT_SECRET;
if (!clientSecret) throw new Error('OIDC_CLIENT_SECRET is not set');
const accounts = JSON.parse(accountsJson);

const configuration = {
  clients: [{
    client_id: clientId,
    client_secret: clientSecret,
    redirect_uris: redirects.split(','),
    response_types: ['code'],
    grant_types: ['authorization_code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  claims: { openid: ['sub'], profile: ['preferred_username', 'name'], groups: ['groups'] },
  scopes: ['openid', 'profile', 'groups'],
  conformIdTokenClaims: conform === 'conform', // false: the requested claims in the ID token itself
  pkce: { required: () => true },
  cookies: { keys: ['searchcrawl-test-provider-cookie-key'] },
  features: { devInteractions: { enabled: true } },
  async findAccount(ctx, id) {
    const account = accounts[id];
    if (!account) return undefined;
    return { accountId: id, async claims() { return { sub: id, preferred_username: id, name: account.name || id, groups: account.groups || [] }; } };
  },
  // a consent is given once per client; the tests' logins are new sessions each time
  loadExistingGrant: async (ctx) => {
    const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    grant.addOIDCScope('openid profile groups');
    grant.addOIDCClaims(['preferred_username', 'name', 'groups']);
    await grant.save();
    return grant;
  },
};

const provider = new Provider(`http://127.0.0.1:${port}`, configuration);
provider.listen(Number(port), '127.0.0.1', () => { console.log(`listening ${port}`); });
