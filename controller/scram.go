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

// ScramResult is the outcome for one deletion or upsertion.
type ScramResult struct {
	User    string
	Err     error
	Message string
}

func (r *ScramResult) errFields() (*error, *string) { return &r.Err, &r.Message }

// AlterUserScramCredentials applies deletions and upsertions as Kafka's ScramControlManager
// validates them: a user named more than once in the request (in either list) is
// DUPLICATE_RESOURCE for every entry of that user; an unknown mechanism
// UNSUPPORTED_SASL_MECHANISM; iterations outside [4096, 16384] or an empty user name
// UNACCEPTABLE_CREDENTIAL; deleting a credential that does not exist RESOURCE_NOT_FOUND.
// Results are the deletions' then the upsertions', in request order.
func (c *Controller) AlterUserScramCredentials(ctx context.Context, deletions []ScramDeletion, upsertions []ScramUpsertion) ([]ScramResult, error) {
	results := make([]ScramResult, 0, len(deletions)+len(upsertions))
	for _, d := range deletions {
		results = append(results, ScramResult{User: d.Name})
	}
	for _, u := range upsertions {
		results = append(results, ScramResult{User: u.Name})
	}
	req := &request{plan: func(w *Image) []Record {
		recs, verrs := planScram(w, deletions, upsertions)
		for i, v := range verrs {
			if v != nil {
				setErr(&results[i].Err, &results[i].Message, v)
			}
		}
		return recs
	}}
	return submitEach(ctx, c, req, results, failUnfailed)
}

// planScram validates the request against w and returns the records of the entries that
// pass, and per entry (deletions first) its error or nil.
func planScram(w *Image, deletions []ScramDeletion, upsertions []ScramUpsertion) ([]Record, []*validationError) {
	count := map[string]int{}
	for _, d := range deletions {
		count[d.Name]++
	}
	for _, u := range upsertions {
		count[u.Name]++
	}
	verrs := make([]*validationError, 0, len(deletions)+len(upsertions))
	var recs []Record
	for _, d := range deletions {
		var v *validationError
		switch {
		case count[d.Name] > 1:
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
		if v == nil {
			recs = append(recs, &RemoveUserScramCredentialRecord{Name: d.Name, Mechanism: d.Mechanism})
		}
		verrs = append(verrs, v)
	}
	for _, u := range upsertions {
		var v *validationError
		h := scramHashOf(u.Mechanism)
		switch {
		case count[u.Name] > 1:
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
		if v == nil {
			clientKey := hmacOf(h, u.SaltedPassword, "Client Key")
			d := h()
			d.Write(clientKey)
			recs = append(recs, &UserScramCredentialRecord{
				Name: u.Name, Mechanism: u.Mechanism, Iterations: u.Iterations,
				Salt:      slices.Clone(u.Salt),
				StoredKey: d.Sum(nil),
				ServerKey: hmacOf(h, u.SaltedPassword, "Server Key"),
			})
		}
		verrs = append(verrs, v)
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
