package cli

// TEMPORARY until the meta store answers segment.Keeper (merge of wt-meta).
type tmpKeeper struct{ n *node }

func (k tmpKeeper) DurableCheckpoint() uint64 {
	if k.n.dispatch == nil {
		return 0
	}
	return k.n.dispatch.Checkpoint()
}

func (k tmpKeeper) HoldsLive(first, last uint64) (bool, error) {
	if k.n.dispatch == nil {
		return true, nil
	}
	return k.n.dispatch.HoldsLive(first, last)
}
