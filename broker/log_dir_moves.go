package broker

// Moving a replica between log directories (AlterReplicaLogDirs, 34_alter_replica_log_dirs.go).
//
// A move runs in its own goroutine, at most num.replica.alter.log.dirs.threads copying at once
// (default: the number of log directories, as Kafka's):
//
//  1. Copy, while the partition serves: its directory is copied file by file into the future
//     directory "<tp>.<moveID>-future" of the destination (logstore.CopyDir), at most
//     replica.alter.log.dirs.io.max.bytes.per.second (this broker's value, or the cluster
//     default, when the move starts), and a second pass copies what changed meanwhile.
//  2. Swap: the partition stops being hosted (requests for it get NOT_LEADER_OR_FOLLOWER,
//     which clients retry; a reconcile does not open it meanwhile), its log is closed, the
//     files that changed since the copy are copied again without a rate limit (the last
//     appends: a segment tail, indexes, checkpoints), and logstore.CommitFuture renames the
//     future directory into place. The next reconcile opens the partition from its new
//     directory and gives it its leadership again, with the high watermark it had; the old
//     copy is removed meanwhile.
//
// Kafka keeps serving from the current log during its swap and catches the future log up by
// fetching from it; sluice's swap makes the partition unavailable for the time of the last
// copy (milliseconds for a partition whose closed segments were copied already). A crash at
// any point leaves the old or the new replica (logstore/move.go). A move that fails (a copy
// error, the source or destination directory failing) removes its future directory and
// leaves the partition where it was.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"sluice/logstore"
)

// logDirMoves are the moves in progress. Its lock is taken before the placement's, never
// under it.
type logDirMoves struct {
	mu struct {
		sync.Mutex
		// byPartition: at most one move per partition.
		byPartition map[topicPartition]*logDirMove
		// handover are the high watermarks of moved partitions until they are opened again.
		handover map[topicPartition]int64
	}
	// slots bounds the moves copying at once (num.replica.alter.log.dirs.threads).
	slots chan struct{}
}

// logDirMove is one move of a partition to another log directory.
type logDirMove struct {
	tp        topicPartition
	dst       int
	futureDir string
	cancel    context.CancelFunc
	done      chan struct{}
	// copied is the bytes copied so far; caughtUp is set once the copy reached the log's
	// size (DescribeLogDirs' offset lag of the future replica).
	copied   atomic.Int64
	caughtUp atomic.Bool
	// swapping: the partition is not hosted while its future directory is swapped in, and a
	// reconcile must not open it from the old directory.
	swapping atomic.Bool
}

func (m *logDirMoves) init() {
	m.mu.byPartition = make(map[topicPartition]*logDirMove)
	m.mu.handover = make(map[topicPartition]int64)
}

// swapping reports whether tp is being swapped into another directory.
func (b *Broker) moveSwapping(tp topicPartition) bool {
	b.moves.mu.Lock()
	defer b.moves.mu.Unlock()
	mv := b.moves.mu.byPartition[tp]
	return mv != nil && mv.swapping.Load()
}

// movingTo returns tp's move in progress, or nil.
func (b *Broker) movingTo(tp topicPartition) *logDirMove {
	b.moves.mu.Lock()
	defer b.moves.mu.Unlock()
	return b.moves.mu.byPartition[tp]
}

// takeHandoverHW returns the high watermark a moved partition had before its swap (-1: none)
// and forgets it.
func (b *Broker) takeHandoverHW(tp topicPartition) (int64, bool) {
	b.moves.mu.Lock()
	defer b.moves.mu.Unlock()
	hw, ok := b.moves.mu.handover[tp]
	delete(b.moves.mu.handover, tp)
	return hw, ok
}

// startMove moves the hosted partition tp to log directory dst, cancelling a move of it to
// another directory. A move to where it is already going is left alone.
func (b *Broker) startMove(tp topicPartition, dst int) error {
	b.moves.mu.Lock()
	if b.moves.slots == nil {
		n := len(b.logDirPaths())
		if v := b.cfg.Static.Int32("num.replica.alter.log.dirs.threads"); v > 0 {
			n = int(v)
		}
		b.moves.slots = make(chan struct{}, n)
	}
	old := b.moves.mu.byPartition[tp]
	b.moves.mu.Unlock()
	if old != nil {
		if old.dst == dst {
			return nil
		}
		if old.swapping.Load() {
			return errors.New("the replica is being swapped into its new directory")
		}
		old.cancel()
		<-old.done
	}
	var id [16]byte
	rand.Read(id[:])
	ctx, cancel := context.WithCancel(context.Background())
	mv := &logDirMove{tp: tp, dst: dst, cancel: cancel, done: make(chan struct{}),
		futureDir: filepath.Join(b.logDirPaths()[dst], logstore.FutureDirName(tp.String(), hex.EncodeToString(id[:])))}
	b.moves.mu.Lock()
	if cur := b.moves.mu.byPartition[tp]; cur != nil {
		b.moves.mu.Unlock()
		cancel()
		if cur.dst == dst {
			return nil
		}
		return errors.New("another move of the replica started meanwhile")
	}
	b.moves.mu.byPartition[tp] = mv
	b.moves.mu.Unlock()
	rate := b.throttledRate(b.ctrl.Image(), alterLogDirsRateKey)
	b.logger.Info("moving a replica to another log directory", "partition", tp.String(), "to", b.logDirPaths()[dst], "future", mv.futureDir)
	go b.runMove(ctx, mv, rate)
	return nil
}

// alterLogDirsRateKey bounds the bytes per second of the copies of all moves.
const alterLogDirsRateKey = "replica.alter.log.dirs.io.max.bytes.per.second"

func (b *Broker) runMove(ctx context.Context, mv *logDirMove, rate int64) {
	defer close(mv.done)
	defer mv.cancel()
	tp := mv.tp
	finish := func() {
		b.moves.mu.Lock()
		if b.moves.mu.byPartition[tp] == mv {
			delete(b.moves.mu.byPartition, tp)
		}
		b.moves.mu.Unlock()
	}
	fail := func(err error) {
		if !errors.Is(err, context.Canceled) {
			b.logger.Error("moving a replica to another log directory failed; it stays where it is", "partition", tp.String(), "future", mv.futureDir, "err", err)
		}
		if rerr := b.fs().RemoveAll(mv.futureDir); rerr != nil {
			b.logger.Warn("removing the future directory of a failed move", "dir", mv.futureDir, "err", rerr)
		}
		finish()
	}
	select {
	case b.moves.slots <- struct{}{}:
		defer func() { <-b.moves.slots }()
	case <-ctx.Done():
		fail(ctx.Err())
		return
	case <-b.closing:
		fail(context.Canceled)
		return
	}
	go func() {
		select {
		case <-b.closing:
			mv.cancel()
		case <-ctx.Done():
		}
	}()
	p := b.partition(tp.topic, tp.partition)
	if p == nil {
		fail(errors.New("the replica is no longer hosted here"))
		return
	}
	src := p.log.Dir()
	if rate == 0 || rate >= 1<<62 {
		rate = 0
	}
	// Phase 1: copy while serving, twice (the second pass takes only what changed).
	copyStart := time.Now()
	for pass := range 2 {
		n, err := logstore.CopyDir(ctx, b.fs(), src, mv.futureDir, pass > 0, rate)
		mv.copied.Add(n)
		if err != nil {
			fail(err)
			return
		}
	}
	mv.caughtUp.Store(true)
	// Flushed while it still serves, so that closing it in the swap has little to write.
	if err := p.log.Flush(); err != nil {
		fail(err)
		return
	}

	// Phase 2: the swap.
	copyTook := time.Since(copyStart)
	swapStart := time.Now()
	mv.swapping.Store(true)
	b.mu.Lock()
	if b.mu.partitions[tp] != p {
		b.mu.Unlock()
		mv.swapping.Store(false)
		fail(errors.New("the replica was removed or replaced during the move"))
		return
	}
	delete(b.mu.partitions, tp)
	b.mu.Unlock()
	b.fetchers.remove(tp)
	p.truncatedOrMoved() // wake parked fetches: they answer and are retried
	hw := p.highWatermark()
	swapErr := p.log.Close()
	if swapErr == nil {
		var n int64
		n, swapErr = logstore.CopyDir(context.Background(), b.fs(), src, mv.futureDir, true, 0)
		mv.copied.Add(n)
	}
	moved := ""
	if swapErr == nil {
		moved, swapErr = logstore.CommitFuture(b.fs(), src, mv.futureDir)
	}
	if swapErr != nil {
		// Repair what the swap left as a restart would, and open the partition wherever
		// its one live directory now is.
		if _, err := logstore.ResolveMoves(b.fs(), b.logDirPaths()); err != nil {
			b.logger.Error("repairing an interrupted log directory move", "partition", tp.String(), "err", err)
		}
		b.placeWhereFound(tp)
		b.logger.Error("swapping a moved replica into its new log directory failed", "partition", tp.String(), "err", swapErr)
	} else {
		b.setPlacement(tp, mv.dst)
		// swap_took is how long the partition was not served.
		b.logger.Info("moved a replica to another log directory", "partition", tp.String(), "dir", b.logDirPaths()[mv.dst], "bytes", mv.copied.Load(),
			"copy_took", copyTook.Round(time.Millisecond).String(), "swap_took", time.Since(swapStart).Round(time.Microsecond).String())
	}
	b.moves.mu.Lock()
	b.moves.mu.handover[tp] = hw
	b.moves.mu.Unlock()
	mv.swapping.Store(false)
	finish()
	b.requestReconcile()
	if moved != "" {
		// The old copy goes once the partition is opened from its new place; a crash before
		// leaves it to ResolveMoves.
		if err := logstore.RemoveMoved(b.fs(), moved); err != nil {
			b.logger.Warn("removing the old copy of a moved replica", "dir", moved, "err", err)
		}
	}
}

// placeWhereFound places tp in the log directory that holds a directory of it (the first
// one), after a failed swap was repaired.
func (b *Broker) placeWhereFound(tp topicPartition) {
	for i, dir := range b.logDirPaths() {
		if names, err := b.fs().ReadDir(dir); err == nil {
			for _, n := range names {
				if n == tp.String() {
					b.setPlacement(tp, i)
					return
				}
			}
		}
	}
}

// requestReconcile asks followImages to reconcile again (opening partitions not hosted).
func (b *Broker) requestReconcile() {
	select {
	case b.offline.reconcile <- struct{}{}:
	default:
	}
}

// cancelMoves stops every move (Close); a move in its swap finishes it.
func (b *Broker) cancelMoves() {
	b.moves.mu.Lock()
	moves := make([]*logDirMove, 0, len(b.moves.mu.byPartition))
	for _, mv := range b.moves.mu.byPartition {
		moves = append(moves, mv)
	}
	b.moves.mu.Unlock()
	for _, mv := range moves {
		mv.cancel()
		<-mv.done
	}
}

// errMoveInternal refuses moving an internal topic's replica: the group and transaction
// coordinators keep their partitions' logs open while they are loaded.
var errMoveInternal = fmt.Errorf("moving replicas of internal topics between log directories is not supported")
