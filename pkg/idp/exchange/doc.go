// Package exchange turns one identity's token into a token that acts as
// another user.
//
//   - CloudSigma's three-step impersonation: client credentials → Keycloak
//     UMA ticket → the service-provider impersonate endpoint.
//   - RFC 8693 token exchange as Keycloak implements it (standard V2, and
//     legacy V1 with requested_subject).
//
// Token requests go through pkg/idp/oauth.
package exchange
