package controller

// SCRAM credentials in the metadata log, as Kafka's KRaft controller keeps them
// (ScramControlManager): per user and mechanism the salt, stored key, server key and
// iteration count, never a password. AlterUserScramCredentials (API 51) upserts them from a
// salted password the client computed, or deletes them; every broker serves SASL SCRAM logins
// from its image, so a credential is usable on every node once the record is applied there.

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"hash"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// SCRAM mechanisms as Kafka numbers them in AlterUserScramCredentials and its records.
const (
	ScramSHA256 int8 = 1
	ScramSHA512 int8 = 2
)

// Kafka's bounds on SCRAM iterations (ScramMechanism: minIterations 4096, maxIterations
// 16384).
const (
	ScramMinIterations = 4096
	ScramMaxIterations = 16384
)

// ScramMechanismName returns Kafka's name of a mechanism number, or "".
func ScramMechanismName(m int8) string {
	switch m {
	case ScramSHA256:
		return "SCRAM-SHA-256"
	case ScramSHA512:
		return "SCRAM-SHA-512"
	}
	return ""
}

// ScramMechanismByName is the inverse of ScramMechanismName (0 for an unknown name).
func ScramMechanismByName(name string) int8 {
	switch name {
	case "SCRAM-SHA-256":
		return ScramSHA256
	case "SCRAM-SHA-512":
		return ScramSHA512
	}
	return 0
}

func scramHashOf(m int8) func() hash.Hash {
	switch m {
	case ScramSHA256:
		return sha256.New
	case ScramSHA512:
		return sha512.New
	}
	return nil
}

// ScramInfo is one user's credential for one mechanism (RFC 5802 section 3). Immutable once
// in an image.
type ScramInfo struct {
	Salt       []byte `json:"salt"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
	Iterations int32  `json:"iterations"`
}

// UserScramCredentialRecord creates or replaces the credential of Name for Mechanism (Kafka's
// UserScramCredentialRecord).
type UserScramCredentialRecord struct {
	Name       string `json:"name"`
	Mechanism  int8   `json:"mechanism"`
	Salt       []byte `json:"salt"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
	Iterations int32  `json:"iterations"`
}

// RemoveUserScramCredentialRecord deletes the credential of Name for Mechanism.
type RemoveUserScramCredentialRecord struct {
	Name      string `json:"name"`
	Mechanism int8   `json:"mechanism"`
}

func (*UserScramCredentialRecord) Type() RecordType       { return RecordUserScramCredential }
func (*RemoveUserScramCredentialRecord) Type() RecordType { return RecordRemoveUserScramCredential }

// ScramCredential returns the credential of user for mechanism in the image.
func (im *Image) ScramCredential(user string, mechanism int8) (ScramInfo, bool) {
	c, ok := im.Scram[user][mechanism]
	return c, ok
}

// applyScram applies the two SCRAM records (copy-on-write: the user's inner map is cloned).
func (b *imageBuilder) applyScram(r Record) error {
	img := b.img
	var user string
	switch r := r.(type) {
	case *UserScramCredentialRecord:
		user = r.Name
		if scramHashOf(r.Mechanism) == nil {
			return ErrInvalidRecord
		}
	case *RemoveUserScramCredentialRecord:
		user = r.Name
		if img.Scram[user] == nil {
			return ErrInvalidRecord
		}
	}
	if !b.scramOwned {
		img.Scram = cloneMap(img.Scram)
		b.scramOwned = true
	}
	m := cloneMap(img.Scram[user])
	switch r := r.(type) {
	case *UserScramCredentialRecord:
		m[r.Mechanism] = ScramInfo{Salt: slices.Clone(r.Salt), StoredKey: slices.Clone(r.StoredKey), ServerKey: slices.Clone(r.ServerKey), Iterations: r.Iterations}
	case *RemoveUserScramCredentialRecord:
		delete(m, r.Mechanism)
	}
	if len(m) == 0 {
		delete(img.Scram, user)
	} else {
		img.Scram[user] = m
	}
	return nil
}

// ScramUpsertion creates or replaces a credential from the client's salted password
// (Hi(password, salt, iterations), RFC 5802).
type ScramUpsertion struct {
	Name           string
	Mechanism      int8
	Iterations     int32
	Salt           []byte
	SaltedPassword []byte
}

// ScramDeletion deletes one credential.
type ScramDeletion struct {
	Name      string
	Mechanism int8
}

// ScramResult is the outcome for one user of the request.
type ScramResult struct {
	User    string
	Err     error
	Message string
}

func (r *ScramResult) errFields() (*error, *string) { return &r.Err, &r.Message }

// ScramUsers returns the distinct users of a request in order of first appearance
// (deletions first): the users AlterUserScramCredentials answers for, in that order.
func ScramUsers(deletions []ScramDeletion, upsertions []ScramUpsertion) []string {
	seen := map[string]bool{}
	var out []string
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, d := range deletions {
		add(d.Name)
	}
	for _, u := range upsertions {
		add(u.Name)
	}
	return out
}

// AlterUserScramCredentials applies deletions and upsertions as Kafka validates them: a user
// with the same mechanism named more than once in the request (in either list) is
// DUPLICATE_RESOURCE; an unknown mechanism UNSUPPORTED_SASL_MECHANISM; iterations outside
// [4096, 16384] or an empty user name UNACCEPTABLE_CREDENTIAL; deleting a credential that
// does not exist RESOURCE_NOT_FOUND. One result per user (ScramUsers order), the error of its
// first failing entry; a user with a failing entry has none of its entries applied, other
// users are unaffected. Several mechanisms of one user in one request are fine
// (kafka-configs --add-config 'SCRAM-SHA-256=[...],SCRAM-SHA-512=[...]').
func (c *Controller) AlterUserScramCredentials(ctx context.Context, deletions []ScramDeletion, upsertions []ScramUpsertion) ([]ScramResult, error) {
	users := ScramUsers(deletions, upsertions)
	results := make([]ScramResult, len(users))
	for i, u := range users {
		results[i].User = u
	}
	req := &request{plan: func(w *Image) []Record {
		recs, verrs := planScram(w, deletions, upsertions)
		for i, u := range users {
			if v := verrs[u]; v != nil {
				setErr(&results[i].Err, &results[i].Message, v)
			}
		}
		return recs
	}}
	return submitEach(ctx, c, req, results, failUnfailed)
}

type scramKey struct {
	user      string
	mechanism int8
}

// planScram validates the request against w and returns the records of the users whose every
// entry passes, and per failing user the error of its first failing entry.
func planScram(w *Image, deletions []ScramDeletion, upsertions []ScramUpsertion) ([]Record, map[string]*validationError) {
	count := map[scramKey]int{}
	for _, d := range deletions {
		count[scramKey{d.Name, d.Mechanism}]++
	}
	for _, u := range upsertions {
		count[scramKey{u.Name, u.Mechanism}]++
	}
	verrs := map[string]*validationError{}
	note := func(user string, v *validationError) {
		if v != nil && verrs[user] == nil {
			verrs[user] = v
		}
	}
	byUser := map[string][]Record{}
	for _, d := range deletions {
		var v *validationError
		switch {
		case count[scramKey{d.Name, d.Mechanism}] > 1:
			v = fail(kerr.DuplicateResource, "A user credential cannot be altered twice in the same request")
		case d.Name == "":
			v = fail(kerr.UnacceptableCredential, "Username must not be empty")
		case scramHashOf(d.Mechanism) == nil:
			v = fail(kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
		default:
			if _, ok := w.ScramCredential(d.Name, d.Mechanism); !ok {
				v = fail(kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist")
			}
		}
		note(d.Name, v)
		if v == nil {
			byUser[d.Name] = append(byUser[d.Name], &RemoveUserScramCredentialRecord{Name: d.Name, Mechanism: d.Mechanism})
		}
	}
	for _, u := range upsertions {
		var v *validationError
		h := scramHashOf(u.Mechanism)
		switch {
		case count[scramKey{u.Name, u.Mechanism}] > 1:
			v = fail(kerr.DuplicateResource, "A user credential cannot be altered twice in the same request")
		case u.Name == "":
			v = fail(kerr.UnacceptableCredential, "Username must not be empty")
		case h == nil:
			v = fail(kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
		case u.Iterations < ScramMinIterations:
			v = fail(kerr.UnacceptableCredential, "Too few iterations")
		case u.Iterations > ScramMaxIterations:
			v = fail(kerr.UnacceptableCredential, "Too many iterations")
		case len(u.SaltedPassword) == 0 || len(u.Salt) == 0:
			v = fail(kerr.UnacceptableCredential, "Salt and salted password must not be empty")
		}
		note(u.Name, v)
		if v == nil {
			clientKey := hmacOf(h, u.SaltedPassword, "Client Key")
			d := h()
			d.Write(clientKey)
			byUser[u.Name] = append(byUser[u.Name], &UserScramCredentialRecord{
				Name: u.Name, Mechanism: u.Mechanism, Iterations: u.Iterations,
				Salt:      slices.Clone(u.Salt),
				StoredKey: d.Sum(nil),
				ServerKey: hmacOf(h, u.SaltedPassword, "Server Key"),
			})
		}
	}
	var recs []Record
	for _, user := range ScramUsers(deletions, upsertions) {
		if verrs[user] == nil {
			recs = append(recs, byUser[user]...)
		}
	}
	return recs, verrs
}

func hmacOf(h func() hash.Hash, key []byte, data string) []byte {
	m := hmac.New(h, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// ScramDescription is one user's answer to DescribeUserScramCredentials.
type ScramDescription struct {
	User    string
	Err     *kerr.Error
	Message string
	// Mechanisms and their iteration counts, by mechanism number.
	Mechanisms []int8
	Iterations []int32
}

// DescribeScram answers DescribeUserScramCredentials from an image, as Kafka's brokers answer
// it from their metadata cache: no names means every user with a credential (sorted);
// a name given twice is DUPLICATE_RESOURCE, one without credentials RESOURCE_NOT_FOUND.
func DescribeScram(im *Image, names []string) []ScramDescription {
	if len(names) == 0 {
		for u := range im.Scram {
			names = append(names, u)
		}
		slices.Sort(names)
	}
	count := map[string]int{}
	for _, n := range names {
		count[n]++
	}
	out := make([]ScramDescription, 0, len(names))
	for _, n := range names {
		d := ScramDescription{User: n}
		switch creds := im.Scram[n]; {
		case count[n] > 1:
			d.Err, d.Message = kerr.DuplicateResource, "Cannot describe SCRAM credentials for the same user twice in a single request"
		case len(creds) == 0:
			d.Err, d.Message = kerr.ResourceNotFound, "Attempt to describe a user credential that does not exist"
		default:
			for m := range creds {
				d.Mechanisms = append(d.Mechanisms, m)
			}
			slices.Sort(d.Mechanisms)
			for _, m := range d.Mechanisms {
				d.Iterations = append(d.Iterations, creds[m].Iterations)
			}
		}
		out = append(out, d)
	}
	return out
}
