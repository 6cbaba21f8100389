package temporal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdktemporal "go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"
)

// KeySize is the size in bytes of a Codec key (AES-256).
const KeySize = 32

// Metadata of an encrypted payload: its encoding, and the id of the key it
// is encrypted under.
const (
	encodingEncrypted = "binary/encrypted"
	metaEncoding      = "encoding"
	metaKeyID         = "encryption-key-id"
)

// Codec is a Temporal payload codec (converter.PayloadCodec) that
// encrypts every payload with AES-256-GCM, so that Temporal's workflow
// histories hold no message, state, token or result in clear: each
// payload becomes a random nonce and the sealed original, under the
// codec's key, whose id (KeyID) its metadata names. It decrypts payloads
// under any of its keys; a payload under another key is an error naming
// it, and a payload that is not encrypted (one written before the codec
// was configured) decodes as it is. The clients that start workflows and
// the workers that run them need the same codec (see ClientOptions). It
// is safe for concurrent use.
type Codec struct {
	id   string                 // of the key that encrypts
	keys map[string]cipher.AEAD // every key, by id
	ids  []string               // their ids, the encrypting one first
}

// NewCodec returns a codec that encrypts under key and decrypts under key
// and every older one: keys rotated out whose payloads histories may still
// hold. Each key is KeySize random bytes.
func NewCodec(key []byte, older ...[]byte) (*Codec, error) {
	c := &Codec{keys: map[string]cipher.AEAD{}}
	for i, k := range append([][]byte{key}, older...) {
		if len(k) != KeySize {
			return nil, fmt.Errorf("temporal: codec key %d has %d bytes, not %d", i+1, len(k), KeySize)
		}
		id := KeyID(k)
		if _, dup := c.keys[id]; dup {
			continue
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		c.keys[id] = aead
		c.ids = append(c.ids, id)
	}
	c.id = c.ids[0]
	return c, nil
}

// KeyID returns the id a codec names key by in the metadata of the
// payloads it encrypts: a hash of the key, which does not reveal it.
func KeyID(key []byte) string {
	h := sha256.Sum256(append([]byte("loom.temporal.key\x00"), key...))
	return hex.EncodeToString(h[:8])
}

// KeyID returns the id of the key the codec encrypts under.
func (c *Codec) KeyID() string { return c.id }

// Encode encrypts every payload under the codec's key.
func (c *Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	aead := c.keys[c.id]
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("temporal: encode payload: %w", err)
		}
		nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
		if _, err := rand.Read(nonce); err != nil {
			return nil, err
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{metaEncoding: []byte(encodingEncrypted), metaKeyID: []byte(c.id)},
			Data:     aead.Seal(nonce, nonce, plain, []byte(c.id)),
		}
	}
	return out, nil
}

// ErrUnknownKey reports a payload encrypted under a key the codec does not
// hold.
var ErrUnknownKey = errors.New("temporal: payload encrypted under a key this codec does not hold")

// Decode decrypts every encrypted payload; one that is not encrypted is
// returned as it is.
func (c *Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[metaEncoding]) != encodingEncrypted {
			out[i] = p
			continue
		}
		id := string(p.GetMetadata()[metaKeyID])
		aead := c.keys[id]
		if aead == nil {
			return nil, fmt.Errorf("%w: key %q (this codec holds %s): give it that key among its older ones", ErrUnknownKey, id, strings.Join(c.ids, ", "))
		}
		data := p.GetData()
		if len(data) < aead.NonceSize()+aead.Overhead() {
			return nil, fmt.Errorf("temporal: encrypted payload under key %q is truncated", id)
		}
		plain, err := aead.Open(nil, data[:aead.NonceSize()], data[aead.NonceSize():], []byte(id))
		if err != nil {
			return nil, fmt.Errorf("temporal: encrypted payload under key %q does not authenticate: altered, or not written by Loom", id)
		}
		var dec commonpb.Payload
		if err := proto.Unmarshal(plain, &dec); err != nil {
			return nil, fmt.Errorf("temporal: decode payload: %w", err)
		}
		out[i] = &dec
	}
	return out, nil
}

// DataConverter returns Temporal's default data converter with the codec
// applied to every payload.
func (c *Codec) DataConverter() converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c)
}

// FailureConverter returns Temporal's default failure converter, encoding
// the details, messages and stack traces of failures with the codec too:
// an error's text may quote what a message held.
func (c *Codec) FailureConverter() converter.FailureConverter {
	return sdktemporal.NewDefaultFailureConverter(sdktemporal.DefaultFailureConverterOptions{
		DataConverter: c.DataConverter(), EncodeCommonAttributes: true,
	})
}

// ClientOptions returns opts with the codec as the data and failure
// converters: a client dialled with them, and every worker created from
// that client, encrypts what it writes to Temporal and decrypts what it
// reads.
func (c *Codec) ClientOptions(opts client.Options) client.Options {
	opts.DataConverter = c.DataConverter()
	opts.FailureConverter = c.FailureConverter()
	return opts
}

var _ converter.PayloadCodec = (*Codec)(nil)
