package cmd_test

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// withCodec gives an unversioned REST client the codec it insists on.
func withCodec(c *rest.Config) *rest.Config {
	c.NegotiatedSerializer = serializer.NewCodecFactory(runtime.NewScheme()).WithoutConversion()
	return c
}
