package logstore

// Log is one partition's log.
type Log struct {
	dir  string
	cfg  Config
	opts Options
}

func Open(dir string, cfg Config, opts Options) (*Log, error) {
	if opts.FS == nil {
		opts.FS = OSFS{}
	}
	if err := opts.FS.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &Log{dir: dir, cfg: cfg, opts: opts}, nil
}

func (l *Log) AppendAsLeader(batches []byte, leaderEpoch int32) (AppendResult, error) {
	return AppendResult{}, ErrClosed
}
func (l *Log) AppendAsFollower(batches []byte) (AppendResult, error) {
	return AppendResult{}, ErrClosed
}
func (l *Log) Read(offset int64, maxBytes int64, maxOffset int64, minOneBatch bool) (ReadResult, error) {
	return ReadResult{}, nil
}
func (l *Log) LogStartOffset() int64                              { return 0 }
func (l *Log) LogEndOffset() int64                                { return 0 }
func (l *Log) OffsetForTimestamp(ts int64) (OffsetAndEpoch, bool) { return OffsetAndEpoch{}, false }
func (l *Log) MaxTimestamp() (OffsetAndEpoch, bool)               { return OffsetAndEpoch{}, false }
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64)       { return -1, -1 }
func (l *Log) LatestEpoch() int32                                 { return -1 }
func (l *Log) DeleteRecordsBefore(offset int64) (int64, error)    { return 0, nil }
func (l *Log) TruncateTo(offset int64) error                      { return nil }
func (l *Log) TruncateFullyAndStartAt(offset int64) error         { return nil }
func (l *Log) EnforceRetention() error                            { return nil }
func (l *Log) SetConfig(cfg Config)                               { l.cfg = cfg }
func (l *Log) Size() int64                                        { return 0 }
func (l *Log) Flush() error                                       { return nil }
func (l *Log) Close() error                                       { return nil }
func (l *Log) Delete() error                                      { return l.opts.FS.RemoveAll(l.dir) }
