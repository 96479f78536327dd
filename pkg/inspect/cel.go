package inspect

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/cel-go/common/types/ref"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	authcel "k8s.io/apiserver/pkg/authentication/cel"
)

// The API server's own CEL compiler and mappers for AuthenticationConfiguration
// (k8s.io/apiserver/pkg/authentication/cel): the same environment, the same
// "claims" and "user" variables, the same type checks. This links cel-go
// into the full binary only; the fast get-token binary stays without it.

func evalClaims(ctx context.Context, acc authcel.ExpressionAccessor, claims map[string]any) (ref.Val, error) {
	cr, err := authcel.NewDefaultCompiler().CompileClaimsExpression(acc)
	if err != nil {
		return nil, fmt.Errorf("compiling %q: %s", acc.GetExpression(), oneLineErr(err))
	}
	res, err := authcel.NewClaimsMapper([]authcel.CompilationResult{cr}).EvalClaimMapping(ctx, &unstructured.Unstructured{Object: claims})
	if err != nil {
		return nil, fmt.Errorf("evaluating %q: %s", acc.GetExpression(), oneLineErr(err))
	}
	return res.EvalResult, nil
}

// celString evaluates a username (or uid) mapping.
func celString(ctx context.Context, expr string, claims map[string]any) (string, error) {
	v, err := evalClaims(ctx, &authcel.ClaimMappingExpression{Expression: expr}, claims)
	if err != nil {
		return "", err
	}
	s, ok := v.Value().(string)
	if !ok {
		return "", fmt.Errorf("%q evaluated to %T, not a string", expr, v.Value())
	}
	return s, nil
}

// celStrings evaluates a groups mapping: a string or a list of strings.
func celStrings(ctx context.Context, expr string, claims map[string]any) ([]string, error) {
	v, err := evalClaims(ctx, &authcel.ClaimMappingExpression{Expression: expr}, claims)
	if err != nil {
		return nil, err
	}
	switch x := v.Value().(type) {
	case string:
		return []string{x}, nil
	case []string:
		return x, nil
	case []any:
		var out []string
		for _, i := range x {
			s, ok := i.(string)
			if !ok {
				return nil, fmt.Errorf("%q returned a list holding %T", expr, i)
			}
			out = append(out, s)
		}
		return out, nil
	}
	nv, err := v.ConvertToNative(stringSliceType)
	if err == nil {
		return nv.([]string), nil
	}
	return nil, fmt.Errorf("%q evaluated to %T, not a string or a list of strings", expr, v.Value())
}

// celClaimRule evaluates a claim validation rule.
func celClaimRule(ctx context.Context, expr string, claims map[string]any) (bool, error) {
	v, err := evalClaims(ctx, &authcel.ClaimValidationCondition{Expression: expr}, claims)
	if err != nil {
		return false, err
	}
	b, ok := v.Value().(bool)
	if !ok {
		return false, fmt.Errorf("%q evaluated to %T, not a bool", expr, v.Value())
	}
	return b, nil
}

// celUserRule evaluates a user validation rule on the mapped identity.
func celUserRule(ctx context.Context, expr string, id Identity) (bool, error) {
	cr, err := authcel.NewDefaultCompiler().CompileUserExpression(&authcel.UserValidationCondition{Expression: expr})
	if err != nil {
		return false, fmt.Errorf("compiling %q: %s", expr, oneLineErr(err))
	}
	groups := make([]any, len(id.Groups))
	for i, g := range id.Groups {
		groups[i] = g
	}
	user := &unstructured.Unstructured{Object: map[string]any{"username": id.Username, "uid": "", "groups": groups, "extra": map[string]any{}}}
	res, err := authcel.NewUserMapper([]authcel.CompilationResult{cr}).EvalUser(ctx, user)
	if err != nil {
		return false, fmt.Errorf("evaluating %q: %s", expr, oneLineErr(err))
	}
	b, ok := res[0].EvalResult.Value().(bool)
	if !ok {
		return false, fmt.Errorf("%q evaluated to %T, not a bool", expr, res[0].EvalResult.Value())
	}
	return b, nil
}

var stringSliceType = reflectTypeOf([]string{})

func reflectTypeOf(v any) reflect.Type { return reflect.TypeOf(v) }

// oneLineErr keeps the first line of a CEL error (the rest draws a caret
// under the expression).
func oneLineErr(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
