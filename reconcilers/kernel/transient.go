package kernel

// Transient says err is neither nil, a Refusal nor a Waiting: the status
// stays as it was (no condition, no Event) and Outcome hands the error back
// for backoff (or a quick look again, for a stale cache or a conflict).
func Transient(err error) bool {
	return err != nil && AsRefusal(err) == nil && AsWaiting(err) == nil
}
