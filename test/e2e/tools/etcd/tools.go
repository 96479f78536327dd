//go:build tools

// Package tools pins the etcd server that the end-to-end tests run
// (etcd 3.6: supported by kube-apiserver 1.35 through 1.37). It is never
// compiled: build.sh builds the main package it names.
package tools

import _ "go.etcd.io/etcd/server/v3"
