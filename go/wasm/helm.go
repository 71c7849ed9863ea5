//go:build js && wasm

package main

import (
	"gitops-broker/helm"
	"gitops-broker/rpc"
)

func init() {
	rpc.Register("helm.render", helm.HandleRender)
	rpc.Register("helm.check", helm.HandleCheck)
	rpc.Register("helm.setFilePaths", helm.HandleSetFilePaths)
}
