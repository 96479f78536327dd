package setup

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/install"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/safefile"
)

// maxCompletionBinary bounds the completion executable read for the copy.
const maxCompletionBinary = 64 << 20

// writeCompletion puts kubectl_complete-impersonate on PATH beside the
// command kubectl runs for the plugin, so that kubectl (1.26+) completes
// "kubectl impersonate ...". Installed by hand or by make install, it is
// already beside the binaries. Installed by Krew, which links one
// executable per plugin (krew#812), it is copied beside Krew's link: a
// copy rather than a link, so that "kubectl krew upgrade", which replaces
// the store directory, leaves it working (it runs the kubectl-impersonate
// beside it, Krew's link), and "kubectl krew uninstall" leaves nothing
// dangling (with the plugin gone it answers no candidate; delete it with
// rm). It says what it did on stdout.
func (o *SetupOptions) writeCompletion() error {
	src, ok := install.Sibling(o.Executable, install.CompletionBinaryName)
	if !ok {
		return fmt.Errorf("%s is not next to %s: install the plugin's release archive, or make install, which ship it",
			install.Exe(install.CompletionBinaryName), o.Executable)
	}
	if o.krewLink == "" {
		fmt.Fprintf(o.Out, "%s is installed beside %s: kubectl completes \"kubectl impersonate ...\" when that "+
			"directory is on PATH.\n", src, o.Executable)
		return nil
	}
	dir := filepath.Dir(o.krewLink)
	dst := filepath.Join(dir, install.Exe(install.CompletionBinaryName))
	b, _, err := safefile.ReadRegular("completion executable", src, maxCompletionBinary, safefile.ReadOptions{})
	if err != nil {
		return err
	}
	switch old, err := os.Lstat(dst); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("writing %s: %w", dst, err)
	case !old.Mode().IsRegular():
		return fmt.Errorf("%s exists and is not a regular file (%s): remove it, then run setup --write-completion "+
			"again", dst, old.Mode().Type())
	default:
		cur, _, err := safefile.ReadRegular("completion executable", dst, maxCompletionBinary, safefile.ReadOptions{})
		if err == nil && bytes.Equal(cur, b) {
			fmt.Fprintf(o.Out, "%s is up to date.\n", dst)
			return nil
		}
	}
	if err := safefile.Write(dst, b, safefile.Options{Mode: 0o755}); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "Wrote %s beside Krew's link: kubectl completes \"kubectl impersonate ...\" (kubectl >= "+
		"1.26). After \"kubectl krew uninstall impersonate\", remove it with rm.\n", dst)
	return nil
}
