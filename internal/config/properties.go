package config

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxPropertiesFileBytes bounds the size of a properties file LoadProperties reads; a broker
// configuration is a few kilobytes.
const MaxPropertiesFileBytes = 16 << 20

// LoadProperties reads a Java .properties file (Kafka's server.properties) and returns its
// key/value pairs. The syntax is java.util.Properties.load's; see ParseProperties.
func LoadProperties(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > MaxPropertiesFileBytes {
		return nil, fmt.Errorf("%s: %d bytes is more than the %d allowed for a properties file", path, st.Size(), MaxPropertiesFileBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	props, err := ParseProperties(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return props, nil
}

// ParseProperties parses the text of a .properties file as java.util.Properties.load does:
//
//   - Lines end with \n, \r or \r\n. A line whose first non-blank character is '#' or '!'
//     is a comment, unless it continues a logical line that already has content; blank
//     lines are skipped. Comments never continue onto the next line.
//   - A line ending in an odd number of backslashes continues on the next line, whose
//     leading blanks (space, tab, form feed) are dropped.
//   - The key runs to the first unescaped '=', ':' or blank; blanks and one '=' or ':'
//     after it are skipped; the rest of the line, trailing blanks included, is the value.
//   - Escapes in keys and values: \t \n \r \f, \uXXXX, and a backslash before any other
//     character stands for that character. A malformed \uXXXX is an error.
//   - A later duplicate key replaces an earlier one.
//
// Kafka reads the file as ISO-8859-1; sluice reads UTF-8 and falls back to ISO-8859-1 only
// when the data is not valid UTF-8, so both kinds of file read as their authors meant.
func ParseProperties(data []byte) (map[string]string, error) {
	var text string
	if utf8.Valid(data) {
		text = string(data)
	} else {
		runes := make([]rune, len(data))
		for i, b := range data {
			runes[i] = rune(b)
		}
		text = string(runes)
	}
	props := map[string]string{}
	r := lineReader{text: text}
	for {
		line, startLine, ok := r.next()
		if !ok {
			return props, nil
		}
		key, value, err := splitKeyValue(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", startLine, err)
		}
		props[key] = value
	}
}

// lineReader yields logical lines the way java.util.Properties' LineReader does, quirks
// included (checked against the JDK on random inputs):
//   - blanks at the start of a logical line, and blank lines, are skipped;
//   - '#' or '!' while the logical line is still empty starts a comment running to the end
//     of the natural line, even right after a continuation;
//   - an odd number of backslashes before a line terminator joins the next natural line,
//     dropping that backslash and the next line's leading blanks; a logical line left empty
//     by this is skipped, except at the very end of the input, where it is an empty line
//     (which yields the key "").
type lineReader struct {
	text string
	pos  int
	line int // natural lines fully consumed
}

// atCRLF reports whether the '\r' just consumed is followed by '\n'.
func (r *lineReader) atCRLF() bool { return r.pos < len(r.text) && r.text[r.pos] == '\n' }

func (r *lineReader) next() (string, int, bool) {
	var buf []byte
	skipBlank := true
	continued := false // just joined a continuation line
	backslash := false // buf ends in an unescaped backslash
	startLine := 0
	for r.pos < len(r.text) {
		c := r.text[r.pos]
		r.pos++
		if c == '\n' || (c == '\r' && !r.atCRLF()) {
			r.line++
		}
		if skipBlank {
			if c == ' ' || c == '\t' || c == '\f' {
				continue
			}
			if !continued && (c == '\r' || c == '\n') {
				continue
			}
			skipBlank, continued = false, false
		}
		if len(buf) == 0 && (c == '#' || c == '!') {
			for r.pos < len(r.text) {
				c = r.text[r.pos]
				r.pos++
				if c == '\n' || (c == '\r' && !r.atCRLF()) {
					r.line++
				}
				if c == '\n' || c == '\r' {
					break
				}
			}
			skipBlank = true
			continue
		}
		if c != '\n' && c != '\r' {
			if len(buf) == 0 {
				startLine = r.line + 1
			}
			buf = append(buf, c)
			backslash = c == '\\' && !backslash
			continue
		}
		// End of a natural line.
		if len(buf) == 0 {
			skipBlank = true
			continue
		}
		if r.pos >= len(r.text) {
			break // end of input right after the terminator
		}
		if !backslash {
			return string(buf), startLine, true
		}
		buf = buf[:len(buf)-1]
		skipBlank, continued, backslash = true, true, false
		if c == '\r' && r.atCRLF() {
			r.pos++
			r.line++
		}
	}
	if len(buf) == 0 {
		return "", 0, false
	}
	if backslash {
		buf = buf[:len(buf)-1]
	}
	return string(buf), startLine, true
}

// splitKeyValue splits one logical line (leading blanks removed, continuations joined) into
// its unescaped key and value.
func splitKeyValue(line string) (string, string, error) {
	keyEnd := len(line)
	valueStart := len(line)
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++ // the escaped character is part of the key
			continue
		}
		if c == '=' || c == ':' {
			keyEnd, valueStart = i, i+1
			break
		}
		if c == ' ' || c == '\t' || c == '\f' {
			keyEnd = i
			// Blanks, then optionally one separator, then blanks.
			j := i
			for j < len(line) && isBlank(line[j]) {
				j++
			}
			if j < len(line) && (line[j] == '=' || line[j] == ':') {
				j++
			}
			valueStart = j
			break
		}
	}
	for valueStart < len(line) && isBlank(line[valueStart]) {
		valueStart++
	}
	key, err := unescape(line[:keyEnd])
	if err != nil {
		return "", "", err
	}
	value, err := unescape(line[valueStart:])
	if err != nil {
		return "", "", err
	}
	return key, value, nil
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			break // a lone trailing backslash is dropped, as Java does at end of input
		}
		switch c = s[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf("malformed \\uxxxx encoding")
			}
			n, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf("malformed \\uxxxx encoding")
			}
			i += 4
			writeUTF16(&b, rune(n), s, &i)
		default:
			// Any other escaped character stands for itself; it may be a multi-byte rune.
			_, size := utf8.DecodeRuneInString(s[i:])
			b.WriteString(s[i : i+size])
			i += size - 1
		}
	}
	return b.String(), nil
}

// writeUTF16 writes r, joining a \uD8xx\uDCxx surrogate pair when the next escape completes
// it. An unpaired surrogate becomes U+FFFD since Go strings hold UTF-8.
func writeUTF16(b *strings.Builder, r rune, s string, i *int) {
	if r >= 0xD800 && r < 0xDC00 && *i+6 < len(s) && s[*i+1] == '\\' && s[*i+2] == 'u' {
		if lo, err := strconv.ParseUint(s[*i+3:*i+7], 16, 16); err == nil && lo >= 0xDC00 && lo < 0xE000 {
			b.WriteRune((r-0xD800)<<10 + (rune(lo) - 0xDC00) + 0x10000)
			*i += 6
			return
		}
	}
	b.WriteRune(r) // WriteRune turns a lone surrogate into U+FFFD
}
