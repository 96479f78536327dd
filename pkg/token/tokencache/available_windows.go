//go:build windows

package tokencache

// platformKeyringAvailable: the Credential Manager is called in-process
// (advapi32's CredReadW, CredWriteW) and answers at once, with an error
// where the user has no loaded profile (a service account:
// ERROR_NO_SUCH_LOGON_SESSION), so nothing is checked before the call.
func platformKeyringAvailable() error { return nil }
