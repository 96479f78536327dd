module github.com/kubectl-impersonate/kubectl-impersonate/test/e2e/testdata/oldcobra

go 1.22

require github.com/spf13/cobra v1.8.1

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/pflag v1.0.5 // indirect
)
