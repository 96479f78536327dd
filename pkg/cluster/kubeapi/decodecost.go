package kubeapi

// An answer's bytes do not bound what decoding it takes: a list of 30 MiB
// of "{}" items is ten million ClusterRoleBindings of some 400 bytes each.
// DecodeCost reads an answer once, before it is decoded, and bounds what
// encoding/json will allocate for it into this project's types: a weight
// for every object and array and for every scalar value, by where it sits.
// The weights bound what decoding allocates in all, the slices' growth
// included, for the largest types decoded (TestDecodeCostBounds measures
// it for the shapes that cost the most for their bytes).

// Weights of the typed answers (discovery, RBAC lists, reviews): a
// container of the document's first three levels (an item of a list, a
// group of discovery, with their ObjectMeta), a deeper container (a rule, a
// subject, a resource), a scalar (a string or number, a map's entry).
const (
	weightItem      = 2048
	weightContainer = 768
	weightScalar    = 192
)

// Weights of a page of objects decoded as resource.Object: an item, and an
// entry of its metadata.labels; everything else is skipped by the decoder.
const (
	weightPageItem  = 1024
	weightPageLabel = 256
)

type frame struct {
	object bool
	// name is the key this container is the value of ("items[]" for an
	// element of the array "items").
	name string
	// key is the key just read, in an object.
	key string
	// expectKey: the next string of an object is a key.
	expectKey bool
}

// DecodeCost is the bound, in bytes, of what decoding b allocates: as
// typed answers, or as a page of objects (page). A malformed document
// costs what was read of it; the decoder refuses it before allocating.
func DecodeCost(b []byte, page bool) int64 {
	var stack []frame
	var cost int64
	skip := 0 // depth of a fieldsV1 value: decoded as raw bytes
	name := func() string {
		if len(stack) == 0 {
			return ""
		}
		top := &stack[len(stack)-1]
		if top.object {
			return top.key
		}
		return top.name + "[]"
	}
	value := func(container bool) {
		if skip > 0 {
			return
		}
		depth := len(stack) // of the container holding this value
		switch {
		case page && container && depth == 2 && stack[1].name == "items" && !stack[1].object:
			cost += weightPageItem
		case page && !container && depth == 5 && stack[4].name == "labels" && stack[3].name == "metadata":
			cost += weightPageLabel
		case page:
		case container && depth < 3:
			cost += weightItem
		case container:
			cost += weightContainer
		default:
			cost += weightScalar
		}
	}
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '{', '[':
			value(true)
			n := name()
			stack = append(stack, frame{object: c == '{', name: n, expectKey: c == '{'})
			if skip == 0 && n == "fieldsV1" {
				skip = len(stack)
			}
		case '}', ']':
			if skip == len(stack) {
				skip = 0
			}
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case ',':
			if len(stack) > 0 && stack[len(stack)-1].object {
				stack[len(stack)-1].expectKey = true
			}
		case '"':
			start := i + 1
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			if len(stack) > 0 && stack[len(stack)-1].object && stack[len(stack)-1].expectKey {
				top := &stack[len(stack)-1]
				top.key, top.expectKey = "", false
				if end := min(i, len(b)); end-start <= 16 {
					top.key = string(b[start:end]) // the names that matter are short
				}
				continue
			}
			value(false)
		case ' ', '\t', '\n', '\r', ':':
		default: // a number, true, false or null
			value(false)
			for i+1 < len(b) && !isDelim(b[i+1]) {
				i++
			}
		}
	}
	return cost
}

func isDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}
