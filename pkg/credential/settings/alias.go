package settings

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"
)

// AliasFlag makes alias another name of the flag canonical (defined
// before): it sets the same value, and using it marks canonical as changed,
// so everything that asks whether canonical was given sees it. The alias is
// hidden from --help. With warn (stderr), using it prints one line saying
// it is deprecated (pflag's own deprecation message goes wherever cobra
// prints, stdout included, which belongs to kubectl and to -o json); with
// nil, an alias kept for another tool's name (kubelogin's) is silent.
func AliasFlag(fs *pflag.FlagSet, alias, canonical string, warn io.Writer) {
	c := fs.Lookup(canonical)
	if c == nil {
		panic("AliasFlag: no flag --" + canonical)
	}
	fs.Var(&aliasValue{Value: c.Value, canonical: c, alias: alias, warn: warn}, alias, "Another name of --"+canonical)
	_ = fs.MarkHidden(alias)
}

type aliasValue struct {
	pflag.Value
	canonical *pflag.Flag
	alias     string
	warn      io.Writer
}

func (v *aliasValue) Set(s string) error {
	if err := v.Value.Set(s); err != nil {
		return err
	}
	v.canonical.Changed = true
	if v.warn != nil {
		fmt.Fprintf(v.warn, "Flag --%s has been deprecated, use --%s\n", v.alias, v.canonical.Name)
	}
	return nil
}
