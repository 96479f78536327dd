// Package credential holds the commands of the credential itself: get-token
// (kubectl's exec credential plugin), login, logout, status and the
// CloudSigma exchange's own commands. Each is an options struct (Complete
// builds its clients, Validate, Run), as kubectl's commands are.
package credential
