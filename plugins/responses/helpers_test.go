package responses

import (
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/sdktest"
)

// The gateway's identity of a test exchange, as the host sends it.
const (
	testHex = "0123456789abcdef0123456789abcdef"
	testID  = "chatcmpl-" + testHex
)

func newPlugin() *sdk.Plugin { return sdk.NewTranslator(Manifest(), New()) }

func newHarness(tb testing.TB) *sdktest.Harness { return sdktest.New(tb, newPlugin()) }

// routeMeta is the meta of a call on the responses route; gwMeta adds
// the gateway's id, model and created of encode calls.
var (
	routeMeta = []string{abi.MetaRoute, RouteResponses, abi.MetaKind, string(sdk.EndpointResponses)}
	countMeta = []string{abi.MetaRoute, RouteInputTokens, abi.MetaKind, string(sdk.EndpointTokenize)}
	gwMeta    = append(append([]string(nil), routeMeta...),
		abi.MetaID, testID, abi.MetaModel, "qwen3-8b", abi.MetaCreated, "1700000000")
)

func ptr[T any](v T) *T { return &v }
