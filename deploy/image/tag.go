package image

import (
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
)

func parseTag(ref string) (name.Tag, error) {
	t, err := name.NewTag(ref)
	if err != nil {
		return name.Tag{}, fmt.Errorf("image: tag %q: %w", ref, err)
	}
	return t, nil
}
