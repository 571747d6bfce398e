package argocd

import (
	"bytes"
	"encoding/json"
)

// Equal says whether two Argo CD values are the same on the wire. Argo CD's types
// carry unexported fields (ApplicationDestination.isServerInferred) that make
// apimachinery's semantic DeepEqual panic, and what matters is what the API
// server stores anyway.
func Equal(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
