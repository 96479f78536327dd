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

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
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
	// The formats, for completion (RegisterCompletions).
	_ = f.SetAnnotation("output", FormatsAnnotation, o.formats())
	return o
}

// FormatsAnnotation is -o's annotation that lists its formats.
const FormatsAnnotation = "kubectl-impersonate.io/formats"

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
		unsafe, err := holdsUnsafeString(b)
		if err != nil {
			return fmt.Errorf("encoding the output: %w", err)
		}
		if unsafe {
			// A string the terminal must not get as it is: the YAML
			// encoder refuses DEL and C1 controls, leaves bidirectional
			// overrides as they are in a plain scalar (where escaping
			// them would change the value) and writes a newline as a
			// line of a block scalar. JSON is YAML too, and its strings
			// take \uXXXX and \n escapes (logging.SafeWriter's) with
			// their values unchanged.
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

// holdsUnsafeString tells whether a string in the JSON document b (a key
// or a value) holds a character of logging.Unsafe, a newline included.
func holdsUnsafeString(b []byte) (bool, error) {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return false, err
	}
	found := false
	walkStrings(v, func(s string) string {
		found = found || strings.ContainsFunc(s, logging.Unsafe)
		return s
	})
	return found, nil
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
	return json.Marshal(walkStrings(v, logging.Escape))
}

// walkStrings replaces every string of the decoded JSON value v, keys
// included, with f of it.
func walkStrings(v any, f func(string) string) any {
	switch t := v.(type) {
	case string:
		return f(t)
	case []any:
		for i := range t {
			t[i] = walkStrings(t[i], f)
		}
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[f(k)] = walkStrings(x, f)
		}
		return out
	}
	return v
}
