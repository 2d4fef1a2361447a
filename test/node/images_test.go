package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// imageSet are the images the node runs, as tarballs imported into
// containerd, and their references.
type imageSet struct {
	pause, consumer, manager string // tarballs
	managerRepo, managerTag  string
	consumerRef              string
}

func (s imageSet) tarballs() []string { return []string{s.pause, s.consumer, s.manager} }

// buildImages: RETENTION_GUARD_NODE_IMAGES names a folder holding
// pause.tar, consumer.tar and manager.tar.
func buildImages(_ context.Context, _ string) (imageSet, error) {
	dir := os.Getenv("RETENTION_GUARD_NODE_IMAGES")
	if dir == "" {
		return imageSet{}, fmt.Errorf("RETENTION_GUARD_NODE_IMAGES is not set")
	}
	return imageSet{
		pause:       filepath.Join(dir, "pause.tar"),
		consumer:    filepath.Join(dir, "consumer.tar"),
		manager:     filepath.Join(dir, "manager.tar"),
		managerRepo: "retentionguard.local/retention-guard",
		managerTag:  "node",
		consumerRef: "retentionguard.local/consumer:node",
	}, nil
}
