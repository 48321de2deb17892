package postgrescdc

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestParseHstore(t *testing.T) {
	pairs, err := parseHstore(`"a"=>"1", "b c"=>"d\"e", "n"=>NULL, "q"=>"NULL", "s"=>"x\\y", ""=>""`)
	if err != nil {
		t.Fatal(err)
	}
	want := []hstorePair{{key: "a", value: "1"}, {key: "b c", value: `d"e`}, {key: "n", value: "NULL", null: true},
		{key: "q", value: "NULL"}, {key: "s", value: `x\y`}, {key: "", value: ""}}
	if !slices.Equal(pairs, want) {
		t.Errorf("got %+v\nwant %+v", pairs, want)
	}
	if pairs, err := parseHstore(""); err != nil || len(pairs) != 0 {
		t.Errorf("empty hstore: %v, %v", pairs, err)
	}
	if pairs, err := parseHstore(`a=>b,c=>NULL`); err != nil || !slices.Equal(pairs, []hstorePair{{key: "a", value: "b"}, {key: "c", value: "NULL", null: true}}) {
		t.Errorf("unquoted: %+v, %v", pairs, err)
	}
	for _, bad := range []string{`"a"=>`, `"a"`, `"a"=>"b" "c"=>"d"`, `"a=>"b"`} {
		if _, err := parseHstore(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// The orders a java.util.HashMap<String,String> (Java 17) iterates these
// keys in after they were put in order, printed by Java itself: bucket
// order, the resizes at three quarters full, the resizes when a bucket of
// a table under 64 buckets reaches 9 keys (the Aa/BB words all share one
// hashCode), and String.hashCode over UTF-16 (the crab is a surrogate
// pair).
func TestJavaHashMapOrder(t *testing.T) {
	var many []string
	for i := 1; i <= 40; i++ {
		many = append(many, "key"+strconv.Itoa(i))
	}
	var words []string
	for i := 0; i < 16; i++ {
		var b strings.Builder
		for bit := 0; bit < 4; bit++ {
			b.WriteString([]string{"Aa", "BB"}[(i>>bit)&1])
		}
		words = append(words, b.String())
	}
	words = slices.Insert(words, 1, "x")
	words = slices.Insert(words, 5, "zz")
	for _, tc := range []struct {
		put  []string
		want string
	}{
		{[]string{"a", "n", "b c"}, "a|b c|n"},
		{many, "key1|key2|key5|key6|key3|key4|key9|key40|key7|key8|key22|key21|key20|key15|key37|key14|key36|key13|key35|key12|key34|key19|key18|key17|key39|key16|key38|key11|key33|key10|key32|key31|key30|key26|key25|key24|key23|key29|key28|key27"},
		{words[:12], "zz|AaAaAaAa|BBAaAaAa|AaBBAaAa|BBBBAaAa|AaAaBBAa|BBAaBBAa|AaBBBBAa|BBBBBBAa|AaAaAaBB|BBAaAaBB|x"},
		{[]string{"ü", "🦀", "é", "ä", "k\x00"}, "ä|k\x00|🦀|é|ü"},
	} {
		var pairs []hstorePair
		for _, k := range tc.put {
			pairs = append(pairs, hstorePair{key: k})
		}
		var got []string
		for _, p := range javaHashMapOrder(pairs) {
			got = append(got, p.key)
		}
		if strings.Join(got, "|") != tc.want {
			t.Errorf("put %q:\n got %s\nwant %s", tc.put, strings.Join(got, "|"), tc.want)
		}
	}
}

func TestHstoreConverters(t *testing.T) {
	text := `"a"=>"1", "b c"=>"d\"e", "n"=>NULL, "ctl"=>"` + "\x01\t/\u2028é" + `"`
	v, err := hstoreConverter("json").parse(text)
	if err != nil {
		t.Fatal(err)
	}
	// HashMap order (buckets 1, 4, 10, 14); Jackson's escaping: short
	// forms, \u00XX in upper case, nothing else.
	if want := `{"a":"1","b c":"d\"e","ctl":"\u0001\t/` + "\u2028é" + `","n":null}`; v != want {
		t.Errorf("json mode: %s, want %s", v, want)
	}
	if p := hstoreConverter("json").placeholder; p != `{"__debezium_unavailable_value":"__debezium_unavailable_value"}` {
		t.Errorf("json placeholder %v", p)
	}
	c := hstoreConverter("map")
	m, err := c.parse(text)
	if err != nil {
		t.Fatal(err)
	}
	got := m.(map[string]any)
	if len(got) != 4 || got["a"] != "1" || got["b c"] != `d"e` || got["n"] != nil {
		t.Errorf("map mode: %v", got)
	}
	if c.schema.Type != "map" || c.schema.Keys.Optional || !c.schema.Values.Optional {
		t.Errorf("map schema %+v", c.schema)
	}
}

// A large hstore is ordered in n log n: its buckets ascend, each in put
// order, over a table of the smallest power of two above n/0.75.
func TestJavaHashMapOrderOfALargeHstore(t *testing.T) {
	n := 50_000
	pairs := make([]hstorePair, n)
	for i := range pairs {
		pairs[i] = hstorePair{key: "k" + strconv.Itoa(i), value: strconv.Itoa(i)}
	}
	out := javaHashMapOrder(pairs)
	capacity := uint32(16)
	for uint32(n) > capacity/4*3 {
		capacity *= 2
	}
	bucket := func(p hstorePair) uint32 { h := javaStringHash(p.key); return (h ^ h>>16) & (capacity - 1) }
	for i := 1; i < n; i++ {
		a, b := out[i-1], out[i]
		if bucket(a) > bucket(b) {
			t.Fatalf("bucket order broken at %d: %s (%d) before %s (%d)", i, a.key, bucket(a), b.key, bucket(b))
		}
		if bucket(a) == bucket(b) && seqOf(t, a.value) > seqOf(t, b.value) {
			t.Fatalf("put order broken within bucket %d: %s before %s", bucket(a), a.key, b.key)
		}
	}
}

func seqOf(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
