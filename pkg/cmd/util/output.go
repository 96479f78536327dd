package util

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/logging"
)

// OutputFlags is one command's -o: json, yaml and jsonpath=TEMPLATE through
// cli-runtime's printers, as kubectl prints them, plus the formats the
// command adds (wide, name). Anything else is refused by Validate, before
// any request.
type OutputFlags struct {
	Format string
	extra  []string
}

// NewOutputFlags binds -o; human says what the default output is ("a
// table", "text"), extra lists the command's own formats.
func NewOutputFlags(f *pflag.FlagSet, human string, extra ...string) *OutputFlags {
	o := &OutputFlags{extra: extra}
	f.StringVarP(&o.Format, "output", "o", "", "Output format: "+strings.Join(o.formats(), "|")+" (default "+human+")")
	return o
}

func (o *OutputFlags) formats() []string {
	return append(append([]string{}, o.extra...), "json", "yaml", "jsonpath=TEMPLATE")
}

// Validate refuses a format the command does not print and a jsonpath
// template that does not parse.
func (o *OutputFlags) Validate() error {
	switch {
	case o.Format == "", o.Format == "json", o.Format == "yaml", slices.Contains(o.extra, o.Format):
		return nil
	case strings.HasPrefix(o.Format, "jsonpath="):
		if _, err := printers.NewJSONPathPrinter(strings.TrimPrefix(o.Format, "jsonpath=")); err != nil {
			return fmt.Errorf("--output %q: %s", o.Format, logging.OneLine(err.Error(), 200))
		}
		return nil
	}
	return fmt.Errorf("--output %q is not one of %s", o.Format, strings.Join(o.formats(), ", "))
}

// Human is true when the command prints its own (table, text, wide or name)
// output.
func (o *OutputFlags) Human() bool {
	return o.Format == "" || slices.Contains(o.extra, o.Format)
}

// Print writes v (its JSON field names) as json, yaml or jsonpath, or
// calls human for the command's own formats.
func (o *OutputFlags) Print(w io.Writer, v any, human func(io.Writer)) error {
	if o.Human() {
		human(w)
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding the output: %w", err)
	}
	// runtime.Unknown carries plain JSON through the printers, which
	// otherwise print only objects with an apiVersion and kind.
	obj := &runtime.Unknown{Raw: b, ContentType: runtime.ContentTypeJSON}
	var p printers.ResourcePrinter
	switch {
	case o.Format == "json":
		p = &printers.JSONPrinter{}
	case o.Format == "yaml":
		if off, _ := logging.SafeOutput(string(b)); off >= 0 {
			// A DEL, C1 control or bidirectional override in a value:
			// the YAML encoder refuses the first two and leaves the last
			// as it is in a plain scalar, where escaping it would change
			// the value. JSON is YAML too, and its strings take \uXXXX
			// escapes (logging.SafeWriter's) with their values unchanged.
			p = &printers.JSONPrinter{}
			break
		}
		p = &printers.YAMLPrinter{}
	default:
		jp, err := printers.NewJSONPathPrinter(strings.TrimPrefix(o.Format, "jsonpath="))
		if err != nil {
			return err
		}
		jp.AllowMissingKeys(true) // kubectl's --allow-missing-template-keys default
		escaped, err := escapedJSON(b)
		if err != nil {
			return fmt.Errorf("encoding the output: %w", err)
		}
		if err := jp.PrintObj(&runtime.Unknown{Raw: escaped, ContentType: runtime.ContentTypeJSON}, w); err != nil {
			first, _, _ := strings.Cut(err.Error(), "\n")
			return fmt.Errorf("applying the jsonpath template: %s", first)
		}
		return nil
	}
	return p.PrintObj(obj, w)
}

// escapedJSON is the JSON document b with every string in it (keys too)
// escaped (logging.Escape): a jsonpath template prints values as text, so
// a newline or a tab in a value would pass for the template's own.
func escapedJSON(b []byte) ([]byte, error) {
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(escapeStrings(v))
}

func escapeStrings(v any) any {
	switch t := v.(type) {
	case string:
		return logging.Escape(t)
	case []any:
		for i := range t {
			t[i] = escapeStrings(t[i])
		}
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[logging.Escape(k)] = escapeStrings(x)
		}
		return out
	}
	return v
}
