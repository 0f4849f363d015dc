package controller

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"sluice/logstore"
)

// On-disk format constants. They must not change: doing so makes existing metadata
// directories unreadable. See the package doc for the layout.
const (
	walFileName  = "raft.wal"
	lockFileName = "lock"
	walMagic     = "SLCWAL01"
	snapMagic    = "SLCSNAP1"
	snapPrefix   = "snap-"
	snapSuffix   = ".snap"
	tmpSuffix    = ".tmp"

	walFrameHeader = 8 // length uint32 + crc32c uint32
	walTypeEntry   = 1
	walTypeHard    = 2

	// maxWALFrame bounds one WAL frame; a length above it is corruption, not a reason to
	// allocate.
	maxWALFrame = 64 << 20
	// maxSnapshotSize bounds a snapshot file's payload for the same reason.
	maxSnapshotSize = 1 << 30
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorruptStorage is returned when the metadata directory cannot be read back (a broken
// frame anywhere but the tail, a gap in the log, no readable snapshot where one is needed).
var ErrCorruptStorage = errors.New("controller: corrupt metadata storage")

// diskStorage keeps the raft log in a WAL file and snapshots beside it, and mirrors both into
// a raft.MemoryStorage that raft reads from. Used only by the driver goroutine.
//
// Invariant: everything in mem (entries after the snapshot, hard state) is also in the WAL or
// the newest snapshot file; the WAL holds no frame that is not fully written except after a
// failed write, which sets err and stops all further writes (sticky error).
type diskStorage struct {
	dir    string
	logger *slog.Logger
	mem    *raft.MemoryStorage

	lock    *os.File // flock'ed for the life of the storage
	wal     *os.File // opened for append; positioned at walSize
	walSize int64
	hard    *pb.HardState // last hard state written to the WAL
	buf     []byte        // reused frame buffer

	// snapshot is the newest snapshot on disk (Metadata.Index 0 = none yet).
	snapshot *pb.Snapshot
	err      error // sticky write error
}

// openStorage opens or creates the metadata directory. voters is the initial configuration
// used when there is no snapshot yet. It returns the storage and the state machine image of
// the newest snapshot (emptyImage if none).
func openStorage(dir string, voters []uint64, logger *slog.Logger) (*diskStorage, *Image, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	lock, err := os.OpenFile(filepath.Join(dir, lockFileName), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, nil, fmt.Errorf("controller: metadata directory %s is in use by another process: %w", dir, err)
	}
	s := &diskStorage{dir: dir, logger: logger, mem: raft.NewMemoryStorage(), lock: lock}
	img, err := s.load(voters)
	if err != nil {
		s.close()
		return nil, nil, err
	}
	return s, img, nil
}

func (s *diskStorage) load(voters []uint64) (*Image, error) {
	names, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, err
	}
	var snaps []uint64
	for _, de := range names {
		name := de.Name()
		switch {
		case strings.HasSuffix(name, tmpSuffix):
			// Left by a crash during a snapshot or WAL rewrite; never renamed, so never valid.
			os.Remove(filepath.Join(s.dir, name))
		case strings.HasPrefix(name, snapPrefix) && strings.HasSuffix(name, snapSuffix):
			idx, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(name, snapPrefix), snapSuffix), 10, 64)
			if err == nil {
				snaps = append(snaps, idx)
			}
		}
	}
	slices.Sort(snaps)

	img := emptyImage()
	snap := &pb.Snapshot{Metadata: &pb.SnapshotMetadata{ConfState: &pb.ConfState{Voters: voters}}}
	// Newest readable snapshot wins; an unreadable one (bad CRC) is skipped, as the WAL is
	// only compacted after a snapshot was durably written.
	for i := len(snaps) - 1; i >= 0; i-- {
		sn, err := readSnapshotFile(filepath.Join(s.dir, snapFileName(snaps[i])))
		if err == nil {
			var im *Image
			if im, err = decodeImage(sn.GetData()); err == nil {
				snap, img = sn, im
				break
			}
		}
		s.logger.Warn("skipping unreadable metadata snapshot", "index", snaps[i], "err", err)
	}
	if err := s.mem.ApplySnapshot(snap); err != nil {
		return nil, err
	}
	s.snapshot = snap

	if err := s.replayWAL(); err != nil {
		return nil, err
	}
	return img, nil
}

func snapFileName(index uint64) string {
	return fmt.Sprintf("%s%020d%s", snapPrefix, index, snapSuffix)
}

// replayWAL reads the WAL into mem, truncating a torn or corrupt tail.
func (s *diskStorage) replayWAL() error {
	path := filepath.Join(s.dir, walFileName)
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if len(data) < len(walMagic) {
		// Missing, or torn before the magic was complete: start a new WAL.
		return s.rewriteWAL()
	}
	if string(data[:len(walMagic)]) != walMagic {
		return fmt.Errorf("%w: %s does not start with %q", ErrCorruptStorage, path, walMagic)
	}
	good := len(walMagic)
	var hard *pb.HardState
	frames, reason := 0, ""
	for pos := good; pos < len(data); {
		typ, payload, next, err := readFrame(data, pos)
		if err != nil {
			if fe := (*frameError)(nil); errors.As(err, &fe) && fe.torn {
				reason = err.Error()
				break
			}
			return fmt.Errorf("%w: %s: %v", ErrCorruptStorage, path, err)
		}
		// From here the frame's CRC is good: it was written whole by this code, so anything
		// that does not decode is corruption (or a newer format), never a torn write.
		switch typ {
		case walTypeEntry:
			e := new(pb.Entry)
			if err := proto.Unmarshal(payload, e); err != nil {
				return fmt.Errorf("%w: %s: entry at %d: %v", ErrCorruptStorage, path, pos, err)
			}
			last, _ := s.mem.LastIndex()
			first, _ := s.mem.FirstIndex()
			if e.GetIndex() > last+1 {
				return fmt.Errorf("%w: %s: entry %d after last index %d", ErrCorruptStorage, path, e.GetIndex(), last)
			}
			if e.GetIndex() >= first {
				if err := s.mem.Append([]*pb.Entry{e}); err != nil {
					return err
				}
			}
		case walTypeHard:
			h := new(pb.HardState)
			if err := proto.Unmarshal(payload, h); err != nil {
				return fmt.Errorf("%w: %s: hard state at %d: %v", ErrCorruptStorage, path, pos, err)
			}
			hard = h
		default:
			return fmt.Errorf("%w: %s: unknown frame type %d at %d", ErrCorruptStorage, path, typ, pos)
		}
		frames++
		pos = next
		good = next
	}
	if hard != nil {
		// A hard state is written after the entries it commits, so a torn tail cannot leave
		// it ahead of the log; if it is, committed entries are missing (e.g. the newest
		// snapshot is unreadable and the WAL was compacted past the fallback).
		if last, _ := s.mem.LastIndex(); hard.GetCommit() > last {
			return fmt.Errorf("%w: %s commits index %d but the log ends at %d", ErrCorruptStorage, path, hard.GetCommit(), last)
		}
		hard = s.clampHardState(hard)
		if err := s.mem.SetHardState(hard); err != nil {
			return err
		}
		s.hard = hard
	}

	f, err := os.OpenFile(path, os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	if good < len(data) {
		// A torn tail: the frames after good were being written when the process or machine
		// died and were never acknowledged as durable. Drop them.
		s.logger.Warn("truncating metadata WAL tail", "file", path, "valid_bytes", good, "dropped_bytes", len(data)-good, "reason", reason)
		if err := f.Truncate(int64(good)); err != nil {
			f.Close()
			return err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	if _, err := f.Seek(int64(good), io.SeekStart); err != nil {
		f.Close()
		return err
	}
	s.wal, s.walSize = f, int64(good)
	s.logger.Debug("replayed metadata WAL", "frames", frames, "bytes", good)
	return nil
}

// clampHardState keeps a recovered hard state consistent with the recovered log: a lost,
// unsynced hard state may lag the snapshot (term or commit below the snapshot's).
func (s *diskStorage) clampHardState(h *pb.HardState) *pb.HardState {
	h = proto.Clone(h).(*pb.HardState)
	snapIndex, snapTerm := s.snapshot.GetMetadata().GetIndex(), s.snapshot.GetMetadata().GetTerm()
	if h.GetTerm() < snapTerm {
		h.Term, h.Vote = new(snapTerm), new(uint64(0))
	}
	if h.GetCommit() < snapIndex {
		h.Commit = new(snapIndex)
	}
	return h
}

// frameError describes a WAL frame that cannot be read. Torn means it looks like the tail of
// a write that never completed (short, zero-filled, or a bad CRC on the very last frame),
// which replay repairs by truncation; anything else is corruption of data that was once
// durable, which replay refuses (as etcd's WAL does for a CRC mismatch before the tail).
type frameError struct {
	torn bool
	msg  string
}

func (e *frameError) Error() string { return e.msg }

// readFrame parses the frame at data[pos:]: length uint32 | crc32c uint32 | type | payload,
// where length and the CRC cover type and payload.
func readFrame(data []byte, pos int) (typ byte, payload []byte, next int, err error) {
	rest := data[pos:]
	if len(rest) < walFrameHeader {
		return 0, nil, 0, &frameError{torn: true, msg: fmt.Sprintf("short frame header at %d", pos)}
	}
	length := binary.BigEndian.Uint32(rest)
	sum := binary.BigEndian.Uint32(rest[4:])
	switch {
	case length == 0:
		if bytes.Count(rest, []byte{0}) == len(rest) {
			return 0, nil, 0, &frameError{torn: true, msg: fmt.Sprintf("zero-filled tail at %d", pos)}
		}
		return 0, nil, 0, &frameError{msg: fmt.Sprintf("zero frame length at %d", pos)}
	case uint64(length) > uint64(len(rest)-walFrameHeader):
		return 0, nil, 0, &frameError{torn: true, msg: fmt.Sprintf("frame at %d of %d bytes extends past the end", pos, length)}
	case length > maxWALFrame:
		return 0, nil, 0, &frameError{msg: fmt.Sprintf("frame length %d at %d above the limit", length, pos)}
	}
	body := rest[walFrameHeader : walFrameHeader+int(length)]
	next = pos + walFrameHeader + int(length)
	if crc32.Checksum(body, castagnoli) != sum {
		return 0, nil, 0, &frameError{torn: next == len(data), msg: fmt.Sprintf("frame CRC mismatch at %d", pos)}
	}
	return body[0], body[1:], next, nil
}

func appendFrame(buf []byte, typ byte, m proto.Message) []byte {
	start := len(buf)
	buf = append(buf, make([]byte, walFrameHeader)...)
	buf = append(buf, typ)
	buf, err := proto.MarshalOptions{}.MarshalAppend(buf, m)
	if err != nil {
		panic(fmt.Sprintf("controller: marshal %T: %v", m, err))
	}
	body := buf[start+walFrameHeader:]
	binary.BigEndian.PutUint32(buf[start:], uint32(len(body)))
	binary.BigEndian.PutUint32(buf[start+4:], crc32.Checksum(body, castagnoli))
	return buf
}

// save persists a Ready's hard state and entries: WAL first (fsync'ed when sync), then mem.
func (s *diskStorage) save(hard *pb.HardState, ents []*pb.Entry, sync bool) error {
	if s.err != nil {
		return s.err
	}
	buf := s.buf[:0]
	for _, e := range ents {
		start := len(buf)
		buf = appendFrame(buf, walTypeEntry, e)
		if len(buf)-start-walFrameHeader > maxWALFrame {
			// Never write what replay would reject as corrupt.
			s.err = fmt.Errorf("controller: raft entry %d of %d bytes exceeds the WAL frame limit", e.GetIndex(), len(buf)-start)
			return s.err
		}
	}
	if hard != nil && !raft.IsEmptyHardState(hard) {
		buf = appendFrame(buf, walTypeHard, hard)
	}
	s.buf = buf
	if len(buf) > 0 {
		if _, err := s.wal.Write(buf); err != nil {
			s.err = fmt.Errorf("controller: writing metadata WAL: %w", err)
			return s.err
		}
		s.walSize += int64(len(buf))
	}
	if sync {
		if err := s.wal.Sync(); err != nil {
			s.err = fmt.Errorf("controller: syncing metadata WAL: %w", err)
			return s.err
		}
	}
	if len(ents) > 0 {
		if err := s.mem.Append(ents); err != nil {
			s.err = err
			return err
		}
	}
	if hard != nil && !raft.IsEmptyHardState(hard) {
		s.hard = hard
		if err := s.mem.SetHardState(hard); err != nil {
			s.err = err
			return err
		}
	}
	return nil
}

// walPath is the WAL's path, for messages.
func (s *diskStorage) walPath() string { return filepath.Join(s.dir, walFileName) }

// failed returns the sticky write error, nil while the storage is healthy.
func (s *diskStorage) failed() error { return s.err }

// repair makes a storage whose write failed usable again, once the file system takes writes:
// the WAL is rewritten whole from mem and the last hard state written (which mirror exactly
// what was persisted before the failure, save appends to mem only after their write and
// fsync succeeded), through a synced temporary file and a rename. That drops whatever a
// failed write left at the tail (a torn frame that would make later frames unreadable) and
// does not trust pages a failed fsync may have lost. On success the sticky error is cleared.
func (s *diskStorage) repair() error {
	if s.err == nil {
		return nil
	}
	s.err = nil
	if err := s.rewriteWAL(); err != nil {
		s.err = err
		return err
	}
	return nil
}

// applySnapshot installs a snapshot received from the leader (multi-voter clusters).
func (s *diskStorage) applySnapshot(snap *pb.Snapshot) error {
	if s.err != nil {
		return s.err
	}
	if err := s.writeSnapshotFile(snap); err != nil {
		s.err = err
		return err
	}
	if err := s.mem.ApplySnapshot(snap); err != nil {
		return err
	}
	s.snapshot = snap
	return s.rewriteWAL()
}

// createSnapshot records the state machine at applied index, then compacts the log up to it.
func (s *diskStorage) createSnapshot(index uint64, cs *pb.ConfState, data []byte) error {
	if s.err != nil {
		return s.err
	}
	// The WAL must be durable up to index before a snapshot makes it redundant, so that a
	// crash never leaves a snapshot newer than the hard state that committed it.
	if err := s.wal.Sync(); err != nil {
		s.err = err
		return err
	}
	snap, err := s.mem.CreateSnapshot(index, cs, data)
	if err != nil {
		return err
	}
	if err := s.writeSnapshotFile(snap); err != nil {
		s.err = err
		return err
	}
	prev := s.snapshot.GetMetadata().GetIndex()
	s.snapshot = snap
	// The rewritten WAL keeps the entries after the previous snapshot (mem is still
	// compacted only up to it), so that previous snapshot plus the WAL remain a complete
	// fallback should the new snapshot turn out unreadable.
	if err := s.rewriteWAL(); err != nil {
		return err
	}
	if err := s.mem.Compact(index); err != nil && !errors.Is(err, raft.ErrCompacted) {
		return err
	}
	s.removeSnapshotsBefore(prev)
	return nil
}

func (s *diskStorage) removeSnapshotsBefore(index uint64) {
	names, err := os.ReadDir(s.dir)
	if err != nil {
		return
	}
	for _, de := range names {
		name := de.Name()
		if !strings.HasPrefix(name, snapPrefix) || !strings.HasSuffix(name, snapSuffix) {
			continue
		}
		idx, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(name, snapPrefix), snapSuffix), 10, 64)
		if err == nil && idx < index {
			os.Remove(filepath.Join(s.dir, name))
		}
	}
}

// writeSnapshotFile writes magic | length uint64 | crc32c uint32 | payload (a marshaled
// raftpb.Snapshot) to a temporary file, syncs it and renames it into place.
func (s *diskStorage) writeSnapshotFile(snap *pb.Snapshot) error {
	payload, err := proto.Marshal(snap)
	if err != nil {
		return err
	}
	var hdr [len(snapMagic) + 12]byte
	copy(hdr[:], snapMagic)
	binary.BigEndian.PutUint64(hdr[len(snapMagic):], uint64(len(payload)))
	binary.BigEndian.PutUint32(hdr[len(snapMagic)+8:], crc32.Checksum(payload, castagnoli))
	name := filepath.Join(s.dir, snapFileName(snap.GetMetadata().GetIndex()))
	return writeFileAtomic(name, append(hdr[:], payload...))
}

func readSnapshotFile(path string) (*pb.Snapshot, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	hdrLen := len(snapMagic) + 12
	if len(data) < hdrLen || string(data[:len(snapMagic)]) != snapMagic {
		return nil, fmt.Errorf("%w: %s: bad header", ErrCorruptStorage, path)
	}
	length := binary.BigEndian.Uint64(data[len(snapMagic):])
	sum := binary.BigEndian.Uint32(data[len(snapMagic)+8:])
	if length > maxSnapshotSize || length != uint64(len(data)-hdrLen) {
		return nil, fmt.Errorf("%w: %s: bad length %d", ErrCorruptStorage, path, length)
	}
	payload := data[hdrLen:]
	if crc32.Checksum(payload, castagnoli) != sum {
		return nil, fmt.Errorf("%w: %s: CRC mismatch", ErrCorruptStorage, path)
	}
	snap := new(pb.Snapshot)
	if err := proto.Unmarshal(payload, snap); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorruptStorage, path, err)
	}
	return snap, nil
}

// rewriteWAL replaces the WAL with one holding only the hard state and the entries in mem
// (those after the snapshot): written to a temporary file, synced, renamed into place.
func (s *diskStorage) rewriteWAL() error {
	buf := []byte(walMagic)
	first, _ := s.mem.FirstIndex()
	last, _ := s.mem.LastIndex()
	if last >= first {
		ents, err := s.mem.Entries(first, last+1, 1<<62)
		if err != nil {
			return err
		}
		for _, e := range ents {
			buf = appendFrame(buf, walTypeEntry, e)
		}
	}
	if s.hard != nil {
		buf = appendFrame(buf, walTypeHard, s.hard)
	}
	path := filepath.Join(s.dir, walFileName)
	if err := writeFileAtomic(path, buf); err != nil {
		s.err = err
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		s.err = err
		return err
	}
	if s.wal != nil {
		s.wal.Close()
	}
	s.wal, s.walSize = f, int64(len(buf))
	return nil
}

// writeFileAtomic writes data to path through a synced temporary file, a rename and a
// directory sync (logstore's WriteFileAtomic on the OS file system).
func writeFileAtomic(path string, data []byte) error {
	return logstore.WriteFileAtomic(logstore.OSFS{}, filepath.Dir(path), filepath.Base(path), data)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// close syncs and closes the WAL and releases the directory lock.
func (s *diskStorage) close() error {
	var err error
	if s.wal != nil {
		if s.err == nil {
			err = s.wal.Sync()
		}
		if cerr := s.wal.Close(); err == nil {
			err = cerr
		}
		s.wal = nil
	}
	if s.lock != nil {
		s.lock.Close() // closing the descriptor releases the flock
		s.lock = nil
	}
	return err
}

// HasState reports whether dir holds metadata: a snapshot file or a WAL with at least one
// frame. A node whose log directory holds partitions but whose metadata directory has no
// state must not start a new cluster over them (see broker.CheckLogDir); this is how it
// tells, before Start creates anything.
func HasState(dir string) (bool, error) {
	names, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	for _, de := range names {
		name := de.Name()
		if strings.HasPrefix(name, snapPrefix) && strings.HasSuffix(name, snapSuffix) {
			return true, nil
		}
		if name == walFileName {
			info, err := de.Info()
			if err != nil {
				return false, err
			}
			if info.Size() > int64(len(walMagic)) {
				return true, nil
			}
		}
	}
	return false, nil
}
