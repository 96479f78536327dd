module github.com/kubectl-impersonate/kubectl-impersonate/test/vulnfixture

go 1.26.0

require golang.org/x/text v0.3.7
