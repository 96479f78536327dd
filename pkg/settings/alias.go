package settings

import "github.com/spf13/pflag"

// AliasFlag makes alias another name of the flag canonical (defined
// before): it sets the same value, and using it marks canonical as changed,
// so everything that asks whether canonical was given sees it. The alias
// is hidden from --help. A deprecated alias prints pflag's one-line
// warning ("Flag --alias has been deprecated, use --canonical") when used;
// one kept for another tool's name (kubelogin's, kube-apiserver's) is
// silent.
func AliasFlag(fs *pflag.FlagSet, alias, canonical string, deprecated bool) {
	c := fs.Lookup(canonical)
	if c == nil {
		panic("AliasFlag: no flag --" + canonical)
	}
	fs.Var(&aliasValue{Value: c.Value, canonical: c}, alias, "Another name of --"+canonical)
	if deprecated {
		_ = fs.MarkDeprecated(alias, "use --"+canonical)
		return
	}
	_ = fs.MarkHidden(alias)
}

type aliasValue struct {
	pflag.Value
	canonical *pflag.Flag
}

func (v *aliasValue) Set(s string) error {
	if err := v.Value.Set(s); err != nil {
		return err
	}
	v.canonical.Changed = true
	return nil
}
