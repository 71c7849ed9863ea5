//go:build js && wasm

package main

import (
	"gitops-broker/gotemplate"
	"gitops-broker/rpc"
)

func init() {
	rpc.Register("gotemplate.render", gotemplate.RenderJSON)
	rpc.Register("gotemplate.compile", gotemplate.CompileJSON)
}
