// A BERT WordPiece tokenizer for the browser that reads a Hugging Face tokenizer.json and gives the
// same ids as the Rust `tokenizers` library (Tokenizer.from_file, no_padding(), enable_truncation(n),
// encode(text).ids) for single sequences. No dependencies, no build step: an ES module.
//
// The steps, in the Rust library's order:
//   1. added tokens ([CLS], [SEP], ...) are found in the raw text, before any normalization;
//   2. each stretch of text between them is normalized (BertNormalizer) ...
//   3. ... split into words (BertPreTokenizer) ...
//   4. ... and each word into WordPiece ids;
//   5. the content is truncated to maxLength minus the special tokens, which are then added
//      (TemplateProcessing or BertProcessing).
// JavaScript strings are UTF-16 while Rust's are UTF-8: everything here works on code points (regexes
// with the u flag, Array.from), never on code units, so "chars" means what Rust's .chars() means.
//
// ortnb/edge/web_tokenizer.py holds the same unsupported() rules in Python, with the same messages.

// Character classes. The Rust library takes control characters, nonspacing marks and punctuation from
// the unicode_categories crate, whose tables are Unicode 8.0 (2015); a current browser's \p{Cf}, \p{Mn}
// and \p{P} disagree with them on some 650 code points added or recategorised since (Adlam and Arabic
// marks, U+2E43.. dashes, ...). So those three classes are the Rust library's own, read from it code
// point by code point, as ranges of hex code points (tests/edge/test_edge_web_tokenizer.py checks them
// against the installed `tokenizers`). Whitespace (Rust's char::is_whitespace) and lowercasing (Rust's
// char::to_lowercase) come from Rust's standard library, which follows current Unicode, as browsers do.
function ranges(text) {
  return text.split(" ").map((range) => range.split("-").map((hex) => `\\u{${hex}}`).join("-")).join("");
}

// clean_text removes Rust's is_other (Cc, Cf, Co; unassigned code points are kept) and \0 and U+FFFD,
// but not \t \n \r, which it counts as whitespace. Removal comes before the whitespace mapping, so
// U+0085 (Cc and White_Space) and \v \f (Cc, and not White_Space in Unicode) go, rather than becoming
// spaces.
const RUST_CONTROL = ranges(
  "0-8 b-c e-1f 7f-9f ad 600-605 61c 6dd 70f 180e 200b-200f 202a-202e 2060-2064 2066-206f e000-f8ff " +
  "feff fff9-fffb fffd 110bd 1bca0-1bca3 1d173-1d17a e0001 e0020-e007f f0000-ffffd 100000-10fffd");

// strip_accents drops these after NFD (nonspacing marks, Mn; spacing Mc and enclosing Me marks stay).
const RUST_NONSPACING_MARK = ranges(
  "300-36f 483-487 591-5bd 5bf 5c1-5c2 5c4-5c5 5c7 610-61a 64b-65f 670 6d6-6dc 6df-6e4 6e7-6e8 6ea-6ed " +
  "711 730-74a 7a6-7b0 7eb-7f3 816-819 81b-823 825-827 829-82d 859-85b 8e3-902 93a 93c 941-948 94d " +
  "951-957 962-963 981 9bc 9c1-9c4 9cd 9e2-9e3 a01-a02 a3c a41-a42 a47-a48 a4b-a4d a51 a70-a71 a75 " +
  "a81-a82 abc ac1-ac5 ac7-ac8 acd ae2-ae3 b01 b3c b3f b41-b44 b4d b56 b62-b63 b82 bc0 bcd c00 c3e-c40 " +
  "c46-c48 c4a-c4d c55-c56 c62-c63 c81 cbc cbf cc6 ccc-ccd ce2-ce3 d01 d41-d44 d4d d62-d63 dca dd2-dd4 " +
  "dd6 e31 e34-e3a e47-e4e eb1 eb4-eb9 ebb-ebc ec8-ecd f18-f19 f35 f37 f39 f71-f7e f80-f84 f86-f87 " +
  "f8d-f97 f99-fbc fc6 102d-1030 1032-1037 1039-103a 103d-103e 1058-1059 105e-1060 1071-1074 1082 " +
  "1085-1086 108d 109d 135d-135f 1712-1714 1732-1734 1752-1753 1772-1773 17b4-17b5 17b7-17bd 17c6 " +
  "17c9-17d3 17dd 180b-180d 18a9 1920-1922 1927-1928 1932 1939-193b 1a17-1a18 1a1b 1a56 1a58-1a5e 1a60 " +
  "1a62 1a65-1a6c 1a73-1a7c 1a7f 1ab0-1abd 1b00-1b03 1b34 1b36-1b3a 1b3c 1b42 1b6b-1b73 1b80-1b81 " +
  "1ba2-1ba5 1ba8-1ba9 1bab-1bad 1be6 1be8-1be9 1bed 1bef-1bf1 1c2c-1c33 1c36-1c37 1cd0-1cd2 1cd4-1ce0 " +
  "1ce2-1ce8 1ced 1cf4 1cf8-1cf9 1dc0-1df5 1dfc-1dff 20d0-20dc 20e1 20e5-20f0 2cef-2cf1 2d7f 2de0-2dff " +
  "302a-302d 3099-309a a66f a674-a67d a69e-a69f a6f0-a6f1 a802 a806 a80b a825-a826 a8c4 a8e0-a8f1 " +
  "a926-a92d a947-a951 a980-a982 a9b3 a9b6-a9b9 a9bc a9e5 aa29-aa2e aa31-aa32 aa35-aa36 aa43 aa4c aa7c " +
  "aab0 aab2-aab4 aab7-aab8 aabe-aabf aac1 aaec-aaed aaf6 abe5 abe8 abed fb1e fe00-fe0f fe20-fe2f 101fd " +
  "102e0 10376-1037a 10a01-10a03 10a05-10a06 10a0c-10a0f 10a38-10a3a 10a3f 10ae5-10ae6 11001 " +
  "11038-11046 1107f-11081 110b3-110b6 110b9-110ba 11100-11102 11127-1112b 1112d-11134 11173 " +
  "11180-11181 111b6-111be 111ca-111cc 1122f-11231 11234 11236-11237 112df 112e3-112ea 11300-11301 " +
  "1133c 11340 11366-1136c 11370-11374 114b3-114b8 114ba 114bf-114c0 114c2-114c3 115b2-115b5 " +
  "115bc-115bd 115bf-115c0 115dc-115dd 11633-1163a 1163d 1163f-11640 116ab 116ad 116b0-116b5 116b7 " +
  "1171d-1171f 11722-11725 11727-1172b 16af0-16af4 16b30-16b36 16f8f-16f92 1bc9d-1bc9e 1d167-1d169 " +
  "1d17b-1d182 1d185-1d18b 1d1aa-1d1ad 1d242-1d244 1da00-1da36 1da3b-1da6c 1da75 1da84 1da9b-1da9f " +
  "1daa1-1daaf 1e8d0-1e8d6 e0100-e01ef");

// NFD itself comes from the browser, but the Rust library's tables (unicode-normalization-alignments)
// predate these decompositions (Unicode 13 to 16: Dives Akuru, Vithkuqi, Tulu-Tigalari, Gurung Khema,
// Kirat Rai), so it leaves these characters whole. A browser on a later Unicode may decompose more.
const RUST_NO_DECOMPOSITION = ranges("105c9 105e4 11383 11385 1138e 11391 113c5 113c7-113c8 11938 16121-16128 16d68-16d6a");

// BERT's punctuation: all of ASCII's non-alphanumeric printable characters (so $ + < = > ^ ` | ~ too,
// which Unicode files as symbols), or Unicode punctuation (P*). Each becomes a word of its own.
const RUST_PUNCTUATION = ranges(
  "21-2f 3a-40 5b-60 7b-7e a1 a7 ab b6-b7 bb bf 37e 387 55a-55f 589-58a 5be 5c0 5c3 5c6 5f3-5f4 609-60a " +
  "60c-60d 61b 61e-61f 66a-66d 6d4 700-70d 7f7-7f9 830-83e 85e 964-965 970 af0 df4 e4f e5a-e5b f04-f12 " +
  "f14 f3a-f3d f85 fd0-fd4 fd9-fda 104a-104f 10fb 1360-1368 1400 166d-166e 169b-169c 16eb-16ed " +
  "1735-1736 17d4-17d6 17d8-17da 1800-180a 1944-1945 1a1e-1a1f 1aa0-1aa6 1aa8-1aad 1b5a-1b60 1bfc-1bff " +
  "1c3b-1c3f 1c7e-1c7f 1cc0-1cc7 1cd3 2010-2027 2030-2043 2045-2051 2053-205e 207d-207e 208d-208e " +
  "2308-230b 2329-232a 2768-2775 27c5-27c6 27e6-27ef 2983-2998 29d8-29db 29fc-29fd 2cf9-2cfc 2cfe-2cff " +
  "2d70 2e00-2e2e 2e30-2e42 3001-3003 3008-3011 3014-301f 3030 303d 30a0 30fb a4fe-a4ff a60d-a60f a673 " +
  "a67e a6f2-a6f7 a874-a877 a8ce-a8cf a8f8-a8fa a8fc a92e-a92f a95f a9c1-a9cd a9de-a9df aa5c-aa5f " +
  "aade-aadf aaf0-aaf1 abeb fd3e-fd3f fe10-fe19 fe30-fe52 fe54-fe61 fe63 fe68 fe6a-fe6b ff01-ff03 " +
  "ff05-ff0a ff0c-ff0f ff1a-ff1b ff1f-ff20 ff3b-ff3d ff3f ff5b ff5d ff5f-ff65 10100-10102 1039f 103d0 " +
  "1056f 10857 1091f 1093f 10a50-10a58 10a7f 10af0-10af6 10b39-10b3f 10b99-10b9c 11047-1104d " +
  "110bb-110bc 110be-110c1 11140-11143 11174-11175 111c5-111c9 111cd 111db 111dd-111df 11238-1123d " +
  "112a9 114c6 115c1-115d7 11641-11643 1173c-1173e 12470-12474 16a6e-16a6f 16af5 16b37-16b3b 16b44 " +
  "1bc9f 1da87-1da8b");

const CONTROL = new RegExp(`[${RUST_CONTROL}]`, "gu");
const NONSPACING_MARK = new RegExp(`[${RUST_NONSPACING_MARK}]`, "gu");
const NO_DECOMPOSITION = new RegExp(`([${RUST_NO_DECOMPOSITION}])`, "u");
const PUNCTUATION = new RegExp(`([${RUST_PUNCTUATION}])`, "u");
// Rust's char::is_whitespace is Unicode's White_Space property (JavaScript's \s is not: it has U+FEFF).
const WHITESPACE = /\p{White_Space}/gu;
const WHITESPACE_RUN = /\p{White_Space}+/u;
// The "Chinese character" ranges of the Rust code (CJK ideographs only: kana and Hangul are words that
// are written with spaces, so they are not split per character).
const CJK = /([\u{4E00}-\u{9FFF}\u{3400}-\u{4DBF}\u{20000}-\u{2A6DF}\u{2A700}-\u{2B73F}\u{2B740}-\u{2B81F}\u{2B920}-\u{2CEAF}\u{F900}-\u{FAFF}\u{2F800}-\u{2FA1F}])/gu;
// The Rust library cannot hold a lone surrogate (its strings are UTF-8); a page's string can. Treat one
// as the U+FFFD that encoding the text to UTF-8 would give (and clean_text removes).
const LONE_SURROGATE = /\p{Cs}/gu;

const NORMALIZER_FLAGS = ["clean_text", "handle_chinese_chars", "strip_accents", "lowercase"];
const ADDED_TOKEN_FLAGS = ["normalized", "lstrip", "rstrip", "single_word"];

/**
 * What in this tokenizer.json the page cannot reproduce, one message per part; [] when it can.
 * The file's own truncation and padding are not read: the page passes maxLength and never pads.
 */
export function unsupported(tokenizerJson) {
  const json = tokenizerJson;
  if (!isObject(json)) return ["not a tokenizer.json object"];
  const problems = [];

  const model = isObject(json.model) ? json.model : {};
  if (model.type !== "WordPiece") {
    problems.push(`model ${show(model.type)} (the page reads WordPiece)`);
  } else if (!isObject(model.vocab)) {
    problems.push("model WordPiece without a vocab");
  } else if (typeof model.unk_token !== "string" || !Object.hasOwn(model.vocab, model.unk_token)) {
    problems.push(`model WordPiece unk_token ${show(model.unk_token)} is not in the vocab`);
  }

  const normalizer = json.normalizer;
  if (normalizer != null) {
    if (normalizer.type !== "BertNormalizer") {
      problems.push(`normalizer ${show(normalizer.type)} (the page reads BertNormalizer or none)`);
    } else {
      for (const flag of NORMALIZER_FLAGS) {
        const value = normalizer[flag];
        // strip_accents may be null: "follow lowercase".
        if (value === undefined || typeof value === "boolean" || (flag === "strip_accents" && value === null)) continue;
        problems.push(`normalizer BertNormalizer ${flag}=${show(value)} (the page reads true or false)`);
      }
    }
  }

  const pre = json.pre_tokenizer;
  if (pre?.type !== "BertPreTokenizer") {
    problems.push(`pre_tokenizer ${show(pre?.type)} (the page reads BertPreTokenizer)`);
  }

  const post = json.post_processor;
  if (post?.type === "TemplateProcessing") {
    // Only the single-sequence template is read: the page never encodes pairs.
    const single = Array.isArray(post.single) ? post.single : [];
    const sequences = single.filter((item) => isObject(item?.Sequence));
    if (sequences.length !== 1 || sequences[0].Sequence.id !== "A") {
      problems.push("post_processor TemplateProcessing single template needs exactly one $A");
    }
    for (const item of single) {
      if (isObject(item?.Sequence)) continue;
      const name = item?.SpecialToken?.id;
      if (typeof name !== "string") {
        problems.push(`post_processor TemplateProcessing single item ${show(item)} (the page reads SpecialToken and Sequence)`);
      } else if (!Array.isArray(post.special_tokens?.[name]?.ids)) {
        problems.push(`post_processor TemplateProcessing special token ${name} has no ids`);
      }
    }
  } else if (post != null && post.type !== "BertProcessing") {
    problems.push(`post_processor ${show(post.type)} (the page reads TemplateProcessing, BertProcessing or none)`);
  }

  for (const token of Array.isArray(json.added_tokens) ? json.added_tokens : []) {
    // Added tokens matched after normalization, or that swallow the spaces around them, would need
    // the Rust library's offset bookkeeping; BERT's special tokens need none of it.
    for (const flag of ADDED_TOKEN_FLAGS) {
      if (token?.[flag]) {
        problems.push(`added token ${show(token.content)} ${flag}=true (the page matches added tokens as they are, in the raw text)`);
      }
    }
  }
  return problems;
}

function isObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** A value in a message: a string as it is, an absent one as "none", anything else as JSON. */
function show(value) {
  if (typeof value === "string") return value;
  return value == null ? "none" : JSON.stringify(value);
}

/** NFD as the Rust library does it: the characters it cannot decompose stay whole. */
function nfd(text) {
  // split() with a capturing group: the odd pieces are those characters.
  return text.split(NO_DECOMPOSITION).map((piece, i) => (i % 2 ? piece : piece.normalize("NFD"))).join("");
}

export class WordPieceTokenizer {
  /**
   * Build from a parsed tokenizer.json; throws an Error naming each part the page cannot reproduce.
   * The file's truncation and padding are not read: encode() takes maxLength and never pads.
   */
  static fromJSON(tokenizerJson) {
    const problems = unsupported(tokenizerJson);
    if (problems.length) throw new Error(`tokenizer.json not supported: ${problems.join("; ")}`);
    return new WordPieceTokenizer(tokenizerJson);
  }

  constructor(json) {
    const model = json.model;
    this.vocab = new Map(Object.entries(model.vocab));
    this.unkId = this.vocab.get(model.unk_token);
    this.prefix = model.continuing_subword_prefix ?? "##";
    this.maxCharsPerWord = model.max_input_chars_per_word ?? 100;

    const n = json.normalizer;
    this.normalizer = n == null ? null : {
      cleanText: n.clean_text ?? true,
      chineseChars: n.handle_chinese_chars ?? true,
      lowercase: n.lowercase ?? true,
      // null means "follow lowercase", as in the Rust code.
      stripAccents: n.strip_accents ?? (n.lowercase ?? true),
    };

    // Longest first: the Rust library matches added tokens leftmost-longest.
    this.addedTokens = (json.added_tokens ?? []).map((t) => [t.content, t.id])
      .filter(([content]) => content.length > 0)
      .sort((a, b) => b[0].length - a[0].length);
    const added = new Set(this.addedTokens.map(([content]) => content));
    // Rust's get_vocab_size(): the model's vocab plus the added tokens it does not already hold.
    this.vocabSize = this.vocab.size + [...added].filter((content) => !this.vocab.has(content)).length;

    // The special-token ids placed before and after the text (single sequences).
    this.before = [];
    this.after = [];
    const post = json.post_processor;
    if (post?.type === "TemplateProcessing") {
      let side = this.before;
      for (const item of post.single) {
        if ("Sequence" in item) side = this.after;
        else side.push(...post.special_tokens[item.SpecialToken.id].ids);
      }
    } else if (post?.type === "BertProcessing") {
      this.before = [post.cls[1]];
      this.after = [post.sep[1]];
    }
  }

  /** Token ids of one text, special tokens included; at most maxLength of them when it is given. */
  encode(text, maxLength = undefined) {
    const ids = [];
    for (const piece of this.splitAddedTokens(String(text).replace(LONE_SURROGATE, "\uFFFD"))) {
      if (typeof piece === "number") {
        ids.push(piece);
        continue;
      }
      for (const word of this.preTokenize(this.normalize(piece))) {
        for (const id of this.wordPiece(word)) ids.push(id);
      }
    }
    const special = this.before.length + this.after.length;
    if (maxLength !== undefined && maxLength !== null) {
      // The Rust library subtracts without a check: there a max_length below this wraps around and
      // nothing is truncated. Refuse it instead.
      if (!Number.isInteger(maxLength) || maxLength < special) {
        throw new Error(`maxLength must be a whole number of at least ${special} (the special tokens), not ${maxLength}`);
      }
      // Keep the first maxLength - special content ids (direction right, no stride, single sequence).
      ids.length = Math.min(ids.length, maxLength - special);
    }
    return [...this.before, ...ids, ...this.after];
  }

  /** The raw text cut at each added token: strings between numbers (the added tokens' ids). */
  splitAddedTokens(text) {
    const pieces = [];
    let start = 0;
    while (start < text.length) {
      // Leftmost match; among matches at the same place, the longest (the list is longest first).
      let best = -1;
      let bestToken = null;
      for (const token of this.addedTokens) {
        const at = text.indexOf(token[0], start);
        if (at !== -1 && (best === -1 || at < best)) {
          best = at;
          bestToken = token;
        }
      }
      if (bestToken === null) break;
      if (best > start) pieces.push(text.slice(start, best));
      pieces.push(bestToken[1]);
      start = best + bestToken[0].length;
    }
    if (start < text.length) pieces.push(text.slice(start));
    return pieces;
  }

  /** BertNormalizer, in the Rust order: clean, CJK spacing, accents, lowercase. */
  normalize(text) {
    const n = this.normalizer;
    if (n === null) return text;
    let s = text;
    if (n.cleanText) s = s.replace(CONTROL, "").replace(WHITESPACE, " ");
    if (n.chineseChars) s = s.replace(CJK, " $1 ");
    if (n.stripAccents) s = nfd(s).replace(NONSPACING_MARK, "");
    // Rust lowercases char by char, so a final capital sigma becomes σ; JavaScript's toLowerCase on a
    // string would make it ς. Every other mapping of toLowerCase is context-free.
    if (n.lowercase) s = s.replaceAll("\u03A3", "\u03C3").toLowerCase();
    return s;
  }

  /** BertPreTokenizer: split on whitespace (dropped), then each punctuation char is its own word. */
  preTokenize(text) {
    const words = [];
    for (const chunk of text.split(WHITESPACE_RUN)) {
      // split() with a capturing group keeps the separators; the empty strings between them go.
      for (const word of chunk.split(PUNCTUATION)) if (word) words.push(word);
    }
    return words;
  }

  /** WordPiece: greedy longest match first, "##" on pieces after the first; one [UNK] otherwise. */
  wordPiece(word) {
    const chars = Array.from(word);  // code points, as Rust's .chars()
    if (chars.length > this.maxCharsPerWord) return [this.unkId];
    // UTF-16 offset of each char boundary, so pieces are slices of the word.
    const offsets = [0];
    for (const c of chars) offsets.push(offsets[offsets.length - 1] + c.length);
    const ids = [];
    let start = 0;
    while (start < chars.length) {
      let end = chars.length;
      let id;
      for (; end > start; end--) {
        const piece = (start > 0 ? this.prefix : "") + word.slice(offsets[start], offsets[end]);
        id = this.vocab.get(piece);
        if (id !== undefined) break;
      }
      // No piece matches at this place: the whole word is one unknown token, not partly known.
      if (id === undefined) return [this.unkId];
      ids.push(id);
      start = end;
    }
    return ids;
  }
}
