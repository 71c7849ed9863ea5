// Package rpc is the registry of the methods the WebAssembly module answers. Each method takes
// the request bytes (usually JSON, passed untouched from JavaScript so numbers keep their text)
// and returns the response bytes or an error whose text reaches the caller.
package rpc

import (
	"fmt"
	"sort"
	"sync"
)

// Method is one callable: request bytes in, response bytes out.
type Method func(request []byte) ([]byte, error)

var (
	mu      sync.RWMutex
	methods = map[string]Method{}
)

// Register adds a method under name. It panics on a duplicate name: two files registering the
// same method is a programming error found at start-up.
func Register(name string, fn func(request []byte) ([]byte, error)) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := methods[name]; dup {
		panic(fmt.Sprintf("rpc: method %q registered twice", name))
	}
	methods[name] = fn
}

// Lookup returns the method registered under name.
func Lookup(name string) (Method, bool) {
	mu.RLock()
	defer mu.RUnlock()
	fn, ok := methods[name]
	return fn, ok
}

// Names lists the registered methods, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	names := make([]string, 0, len(methods))
	for name := range methods {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Call runs the method registered under name; an unknown name is an error.
func Call(name string, request []byte) ([]byte, error) {
	fn, ok := Lookup(name)
	if !ok {
		return nil, fmt.Errorf("unknown method %q (known: %v)", name, Names())
	}
	return fn(request)
}
