// Command vulnfixture proves that make test's vulnerability check can
// fail: it calls language.ParseAcceptLanguage of golang.org/x/text v0.3.7,
// which GO-2022-1059 (CVE-2022-32149, a denial of service on crafted
// Accept-Language headers, fixed in v0.3.8) names. hack/vulncheck.sh
// requires govulncheck to report exactly that here; this module is never
// built into anything.
package main

import (
	"fmt"
	"os"

	"golang.org/x/text/language"
)

func main() {
	tags, _, err := language.ParseAcceptLanguage(os.Getenv("ACCEPT_LANGUAGE"))
	fmt.Println(tags, err)
}
