package filesink

// Syncs is how many fsyncs the sink has begun.
func (s *Sink) Syncs() int64 { return s.syncs.Load() }
