package controller

import (
	"crypto/pbkdf2"
	"crypto/sha256"
	"errors"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func saltedSHA256(t *testing.T, password string, salt []byte, iterations int) []byte {
	t.Helper()
	k, err := pbkdf2.Key(sha256.New, password, salt, iterations, sha256.Size)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestScramCredentialsUpsertDescribeDelete(t *testing.T) {
	c := startTest(t, testConfig(t.TempDir()))
	ctx := testCtx(t)
	salt := []byte("0123456789abcdef")
	salted := saltedSHA256(t, "alice-secret", salt, 8192)
	res, err := c.AlterUserScramCredentials(ctx, nil, []ScramUpsertion{{Name: "alice", Mechanism: ScramSHA256, Iterations: 8192, Salt: salt, SaltedPassword: salted}})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("upsert: %v %+v", err, res)
	}
	cred, ok := c.Image().ScramCredential("alice", ScramSHA256)
	if !ok || cred.Iterations != 8192 || string(cred.Salt) != string(salt) {
		t.Fatalf("image has %+v %v", cred, ok)
	}
	// The stored and server keys are RFC 5802's, from the salted password.
	clientKey := hmacOf(sha256.New, salted, "Client Key")
	h := sha256.Sum256(clientKey)
	if string(cred.StoredKey) != string(h[:]) || string(cred.ServerKey) != string(hmacOf(sha256.New, salted, "Server Key")) {
		t.Fatal("stored or server key is not RFC 5802's")
	}
	d := DescribeScram(c.Image(), nil)
	if len(d) != 1 || d[0].User != "alice" || !reflect.DeepEqual(d[0].Mechanisms, []int8{ScramSHA256}) || d[0].Iterations[0] != 8192 {
		t.Fatalf("describe all: %+v", d)
	}
	// The image survives a snapshot round trip.
	back, err := decodeImage(encodeImage(c.Image()))
	if err != nil || !reflect.DeepEqual(back.Scram, c.Image().Scram) {
		t.Fatalf("snapshot round trip: %v", err)
	}
	res, err = c.AlterUserScramCredentials(ctx, []ScramDeletion{{Name: "alice", Mechanism: ScramSHA256}}, nil)
	if err != nil || res[0].Err != nil {
		t.Fatalf("delete: %v %+v", err, res)
	}
	if _, ok := c.Image().ScramCredential("alice", ScramSHA256); ok {
		t.Fatal("credential still in the image after deletion")
	}
	d = DescribeScram(c.Image(), []string{"alice", "bob", "bob"})
	if !errors.Is(d[0].Err, kerr.ResourceNotFound) || !errors.Is(d[1].Err, kerr.DuplicateResource) {
		t.Fatalf("describe after delete: %+v", d)
	}
}

func TestScramCredentialsValidation(t *testing.T) {
	c := startTest(t, testConfig(t.TempDir()))
	ctx := testCtx(t)
	salt, pw := []byte("salt"), []byte("salted")
	res, err := c.AlterUserScramCredentials(ctx,
		[]ScramDeletion{{Name: "dup", Mechanism: ScramSHA512}, {Name: "ghost", Mechanism: ScramSHA512}, {Name: "m", Mechanism: 9}},
		[]ScramUpsertion{
			{Name: "dup", Mechanism: ScramSHA512, Iterations: 4096, Salt: salt, SaltedPassword: pw},
			{Name: "few", Mechanism: ScramSHA256, Iterations: 4095, Salt: salt, SaltedPassword: pw},
			{Name: "many", Mechanism: ScramSHA256, Iterations: 16385, Salt: salt, SaltedPassword: pw},
			{Name: "unknown", Mechanism: 3, Iterations: 4096, Salt: salt, SaltedPassword: pw},
			{Name: "", Mechanism: ScramSHA256, Iterations: 4096, Salt: salt, SaltedPassword: pw},
			// Both mechanisms of one user in one request are fine (kafka-configs sends that).
			{Name: "ok", Mechanism: ScramSHA512, Iterations: 16384, Salt: salt, SaltedPassword: pw},
			{Name: "ok", Mechanism: ScramSHA256, Iterations: 4096, Salt: salt, SaltedPassword: pw},
			// One bad entry of a user: none of that user's entries apply.
			{Name: "half", Mechanism: ScramSHA256, Iterations: 4096, Salt: salt, SaltedPassword: pw},
			{Name: "half", Mechanism: ScramSHA512, Iterations: 100, Salt: salt, SaltedPassword: pw},
		})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		user string
		err  *kerr.Error
	}{
		{"dup", kerr.DuplicateResource}, {"ghost", kerr.ResourceNotFound}, {"m", kerr.UnsupportedSaslMechanism},
		{"few", kerr.UnacceptableCredential}, {"many", kerr.UnacceptableCredential}, {"unknown", kerr.UnsupportedSaslMechanism},
		{"", kerr.UnacceptableCredential}, {"ok", nil}, {"half", kerr.UnacceptableCredential},
	}
	if len(res) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(res), len(want), res)
	}
	for i, w := range want {
		if res[i].User != w.user || w.err == nil && res[i].Err != nil || w.err != nil && !errors.Is(res[i].Err, w.err) {
			t.Errorf("result %d: %q %v %q, want %q %v", i, res[i].User, res[i].Err, res[i].Message, w.user, w.err)
		}
	}
	im := c.Image()
	_, ok512 := im.ScramCredential("ok", ScramSHA512)
	_, ok256 := im.ScramCredential("ok", ScramSHA256)
	if !ok512 || !ok256 || len(im.Scram) != 1 {
		t.Fatalf("image users %v: only user ok's two upsertions must apply", im.Scram)
	}
}

func TestClientQuotasAlterDescribe(t *testing.T) {
	c := startTest(t, testConfig(t.TempDir()))
	ctx := testCtx(t)
	c1, alice := str("c1"), str("alice")
	res, err := c.AlterClientQuotas(ctx, []QuotaAlteration{
		{Entity: []QuotaEntityPart{{Type: QuotaClientID, Name: c1}}, Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 1024}, {Key: QuotaRequestPercentage, Value: 12.5}}},
		{Entity: []QuotaEntityPart{{Type: QuotaUser, Name: alice}, {Type: QuotaClientID}}, Ops: []QuotaOp{{Key: QuotaConsumerByteRate, Value: 2048}}},
		{Entity: []QuotaEntityPart{{Type: QuotaIP, Name: str("10.0.0.1")}}, Ops: []QuotaOp{{Key: QuotaConnectionCreationRate, Value: 5}}},
		{Entity: []QuotaEntityPart{{Type: QuotaIP, Name: str("10.0.0.1")}}, Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 5}}},
		{Entity: []QuotaEntityPart{{Type: "group", Name: c1}}, Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 5}}},
		{Entity: []QuotaEntityPart{{Type: QuotaClientID, Name: c1}, {Type: QuotaClientID}}, Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 5}}},
		{Entity: []QuotaEntityPart{{Type: QuotaClientID, Name: str("c2")}}, Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 1.5}}},
		{Entity: []QuotaEntityPart{{Type: QuotaClientID, Name: str("c2")}}, Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: -1}}},
		{Entity: []QuotaEntityPart{{Type: QuotaUser, Name: alice}, {Type: QuotaIP}}, Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 1}}},
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if ok := i < 3; ok != (r.Err == nil) || !ok && !errors.Is(r.Err, kerr.InvalidRequest) {
			t.Errorf("entry %d: %v %q", i, r.Err, r.Message)
		}
	}
	im := c.Image()
	if got := im.Quotas[QuotaEntity{ClientID: QuotaName{Set: true, Name: "c1"}}]; got[QuotaProducerByteRate] != 1024 || got[QuotaRequestPercentage] != 12.5 {
		t.Fatalf("c1 quotas %v", got)
	}
	d, code, _ := DescribeClientQuotas(im, []QuotaFilterComponent{{EntityType: QuotaClientID, MatchType: QuotaMatchExact, Match: c1}}, false)
	if code != nil || len(d) != 1 || d[0].Values[QuotaProducerByteRate] != 1024 {
		t.Fatalf("describe c1: %v %+v", code, d)
	}
	d, _, _ = DescribeClientQuotas(im, []QuotaFilterComponent{{EntityType: QuotaClientID, MatchType: QuotaMatchDefault}}, true)
	if len(d) != 0 {
		t.Fatalf("strict default client-id matched %+v", d)
	}
	d, _, _ = DescribeClientQuotas(im, []QuotaFilterComponent{{EntityType: QuotaClientID, MatchType: QuotaMatchDefault}}, false)
	if len(d) != 1 || d[0].Entity.User.Name != "alice" {
		t.Fatalf("non-strict default client-id: %+v", d)
	}
	if _, code, _ := DescribeClientQuotas(im, []QuotaFilterComponent{{EntityType: QuotaUser}, {EntityType: QuotaUser}}, false); code != kerr.InvalidRequest {
		t.Fatalf("duplicate filter type: %v", code)
	}
	back, err := decodeImage(encodeImage(im))
	if err != nil || !reflect.DeepEqual(back.Quotas, im.Quotas) {
		t.Fatalf("snapshot round trip: %v %v", err, back.Quotas)
	}
	res, err = c.AlterClientQuotas(ctx, []QuotaAlteration{{Entity: []QuotaEntityPart{{Type: QuotaClientID, Name: c1}}, Ops: []QuotaOp{{Key: QuotaProducerByteRate, Remove: true}, {Key: QuotaRequestPercentage, Remove: true}}}}, false)
	if err != nil || res[0].Err != nil {
		t.Fatal(err, res)
	}
	if _, ok := c.Image().Quotas[QuotaEntity{ClientID: QuotaName{Set: true, Name: "c1"}}]; ok {
		t.Fatal("removing every key must remove the entity")
	}
}

func TestScramQuotaRecordsRoundTrip(t *testing.T) {
	for _, r := range []Record{
		&UserScramCredentialRecord{Name: "a", Mechanism: ScramSHA512, Salt: []byte{1}, StoredKey: []byte{2}, ServerKey: []byte{3}, Iterations: 4096},
		&RemoveUserScramCredentialRecord{Name: "a", Mechanism: ScramSHA256},
		&ClientQuotaRecord{Entity: []QuotaEntityPart{{Type: QuotaUser}, {Type: QuotaClientID, Name: str("x")}}, Key: QuotaConsumerByteRate, Value: 10},
	} {
		got, err := DecodeRecord(EncodeRecord(r))
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Errorf("%T: %v %+v", r, err, got)
		}
	}
}
