package execcred

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// parseProcArgs parses macOS's kern.procargs2 of a process: argc (int32),
// the exec path, NUL padding, argc arguments, then the environment up to
// an empty string (Apple's own strings follow, not the environment's).
func parseProcArgs(b []byte) (string, []string, error) {
	if len(b) < 4 {
		return "", nil, errors.New("kern.procargs2: too short")
	}
	argc := int(binary.LittleEndian.Uint32(b))
	b = b[4:]
	next := func() (string, bool) {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			return "", false
		}
		s := string(b[:i])
		b = b[i+1:]
		return s, true
	}
	path, ok := next()
	if !ok {
		return "", nil, errors.New("kern.procargs2: no exec path")
	}
	for len(b) > 0 && b[0] == 0 {
		b = b[1:]
	}
	for range argc {
		if _, ok := next(); !ok {
			return path, nil, errors.New("kern.procargs2: arguments cut short")
		}
	}
	var env []string
	for {
		s, ok := next()
		if !ok || s == "" {
			return path, env, nil
		}
		env = append(env, s)
	}
}
