//go:build js && wasm

// Command wasm is the WebAssembly module gitops-broker loads (GOOS=js GOARCH=wasm). It sets
// globalThis.gitopsBrokerModule = { call(method, request) } and then waits for calls. A call takes
// the method name and the request bytes (a Uint8Array) and returns the response bytes (a
// Uint8Array) or the error text (a string). Methods register from their own file's init().
package main

import (
	"fmt"
	"syscall/js"

	"gitops-broker/rpc"
)

func main() {
	call := js.FuncOf(func(this js.Value, args []js.Value) interface{} {
		if len(args) != 2 || args[0].Type() != js.TypeString {
			return "call(method, request): expected a method name and a Uint8Array"
		}
		request := make([]byte, args[1].Get("length").Int())
		js.CopyBytesToGo(request, args[1])
		response, err := safeCall(args[0].String(), request)
		if err != nil {
			return err.Error()
		}
		out := js.Global().Get("Uint8Array").New(len(response))
		js.CopyBytesToJS(out, response)
		return out
	})
	module := js.Global().Get("Object").New()
	module.Set("call", call)
	names := rpc.Names()
	list := js.Global().Get("Array").New(len(names))
	for i, name := range names {
		list.SetIndex(i, name)
	}
	module.Set("methods", list)
	js.Global().Set("gitopsBrokerModule", module)
	select {}
}

// safeCall turns a method's panic into its error, so one bad request does not end the module.
func safeCall(method string, request []byte) (response []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: panic: %v", method, r)
		}
	}()
	return rpc.Call(method, request)
}
