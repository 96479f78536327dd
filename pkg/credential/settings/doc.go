// Package settings binds the credential's flags, profiles and kubectl's
// exec entry into one credspec.Spec.
//
//   - The flags of get-token and login, the profile file, kubelogin's
//     older names.
//   - The trust rules of an exec entry someone else may have written: which
//     flags a locked entry may set, and kubectl's environment read as
//     kubectl started.
package settings
