#!/usr/bin/env python3
"""Writes the hard part of the tokenizer comparison corpus into OUTDIR: text
in many scripts, emoji sequences, whitespace runs, every added token of the
given tokenizers inside text, Unicode that normalization changes, ill-formed
UTF-8, and seeded random code points. (The easy, large part is the Python
standard library's sources, which the example models were trained on.)

  make_corpus.py OUTDIR [TOKENIZER_DIR...]

The random code points are those assigned in Unicode 14.0 (Python 3.11's
unicodedata), the version of PCRE2 10.42's tables.
"""
import json
import os
import random
import sys
import unicodedata

MULTILINGUAL = """\
English: The quick brown fox jumps over the lazy dog. I'M SURE IT'S FINE, we'll see; they'd've known.
Français : « Où est la bibliothèque ? » — Ça coûte 12,50 € ; l'œuvre d'Éloïse.
Deutsch: Größenwahn, Straße, Äpfel und Übermut; ẞ ist groß.
Español: ¿Dónde está el niño? ¡Qué año más pequeño!
Português: Não há coração sem razão; açaí, pão e maçã.
Polski: Zażółć gęślą jaźń. Čeština: Příliš žluťoučký kůň úpěl ďábelské ódy.
Türkçe: İstanbul'da ılık bir gün; IĞDIR, şoför, çiçek.
Ελληνικά: Ξεσκεπάζω την ψυχοφθόρα βδελυγμία. ΟΔΥΣΣΕΥΣ, ὁδός.
Русский: Съешь же ещё этих мягких французских булок, да выпей чаю. Ёлка!
Українська: Чуєш їх, доцю, га? Кумедна ж ти, прощайся без ґольфів!
العربية: نص حكيم له سر قاطع وذو شأن عظيم مكتوب على ثوب أخضر ومغلف بجلد أزرق. ١٢٣٤٥٦٧٨٩٠
עברית: דג סקרן שט בים מאוכזב ולפתע מצא חברה.
हिन्दी: ऋषियों को सताने वाले दुष्ट राक्षसों के राजा रावण का सर्वनाश करने वाले विष्णुवतार भगवान श्रीराम। १२३४
বাংলা: আমি বাংলায় গান গাই। தமிழ்: யாமறிந்த மொழிகளிலே தமிழ்மொழி போல் இனிதாவது எங்கும் காணோம்.
ไทย: เป็นมนุษย์สุดประเสริฐเลิศคุณค่า กว่าบรรดาฝูงสัตว์เดรัจฉาน
Tiếng Việt: Tôi có thể ăn thủy tinh mà không hại gì. Đường phố Hà Nội.
中文：我能吞下玻璃而不伤身体。龍龘齉鱻。漢字と仮名。豈更丘（CJK兼容）
日本語：いろはにほへと　ちりぬるを。カタカナ、ひらがな、半角ｶﾀｶﾅ、全角ＡＢＣ１２３。
한국어: 다람쥐 헌 쳇바퀴에 타고파. 한글 자모: ᄒᆞᆫ글.
Ქართული: ეს არის ქართული ტექსტი. Հայերեն: Բարեւ աշխարհ. አማርኛ: ሰላም ለዓለም።
ꦧꦱꦗꦮ (Javanese), 𐌰𐌱𐌲 (Gothic), 𓀀𓀁 (hieroglyphs), 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕄𝕒𝕥𝕙, 𠀀𠀁𪚥 (CJK Ext B)
Mixed: naïve café résumé coöperate; x² + y³ = z¹⁰; ½ ¼ ¾; №5; ℃ ℉ Ω Å K.
"""

EMOJI = """\
Simple: 😀 😃 😄 😁 😆 😅 🤣 😂 🙂 🙃 😉 😊 😇 🥰 😍 🤩
Skin tones: 👍 👍🏻 👍🏼 👍🏽 👍🏾 👍🏿 🧑🏽‍💻 👩🏿‍🔬
ZWJ families: 👨‍👩‍👧‍👦 👩‍❤️‍💋‍👨 🏳️‍🌈 🏴‍☠️ 🐻‍❄️
Flags: 🇺🇸 🇫🇷 🇯🇵 🇧🇷 🏴󠁧󠁢󠁳󠁣󠁴󠁿 keycaps: 1️⃣ #️⃣ *️⃣ variation: ☺︎ ☺️ ❤ ❤️
In text: I❤️NY, 100💯, tag:🔥🔥🔥🔥🔥🔥🔥🔥🔥🔥, zero width: a\u200bb\u200cc\u200dd\u2060e
"""


def whitespace():
    parts = []
    for n in (1, 2, 3, 7, 16, 64, 300, 2000):
        parts.append("word" + " " * n + "word")
        parts.append("\t" * n + "indented")
        parts.append("line" + "\n" * n)
        parts.append("crlf" + "\r\n" * n)
    specials = ["\u00a0", "\u1680", "\u2000", "\u2009", "\u200a", "\u2028", "\u2029",
                "\u202f", "\u205f", "\u3000", "\u0085", "\ufeff", "\x0b", "\x0c", "\r"]
    for s in specials:
        parts.append(f"a{s}b {s}c{s}{s} d {s}\n{s}e")
    parts.append("trailing   \n   leading\n \n\n  \t \n")
    return "\ufeff" + "".join(parts) + "   "


def special(tokenizer_dirs):
    contents = set()
    for d in tokenizer_dirs:
        with open(os.path.join(d, "tokenizer.json"), encoding="utf-8") as f:
            contents.update(t["content"] for t in json.load(f).get("added_tokens", []))
    rng = random.Random(7)
    parts = []
    for c in sorted(contents):
        parts.append(f"text{c}text {c} {c}{c}\n{c[:-1]} {c[1:]} x{c}y\n")
    words = sorted(contents) + ["hello", " ", "\n", "world", "<", ">", "|", "def f():"]
    parts.append("".join(rng.choice(words) for _ in range(3000)))
    return "".join(parts)


def unicode_text():
    rng = random.Random(11)
    parts = [
        "e\u0301 a\u0308 o\u0303\u0304 \u1100\u1161\u11a8 \u0041\u030a \u212b \u00c5",
        "\ufb01 \ufb02 \uff21\uff22 \u2460 \u00b5 \u03bc \u1e9b\u0323 \u0390",
        "IT'S I'M WE'RE THEY'VE YOU'LL HE'D 'S 'T 'Re 'vE",
        "٣٤٥ ۴۵۶ ४५६ ๑๒๓ 一二三 ⅠⅡⅢ 12345678901234567890 3.14159 1e-10 0x1F",
        "\u4e00\u9fa5\u9fa6\u3040\u309f\u30a0\u30ff\u3400",
        "a" * 5000, " " + "b" * 999,
        "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
                for _ in range(4000)) + "==",
        "".join(chr(c) for c in range(1, 32)) + "\x7f\x80\x9f",
    ]
    code_points = []
    while len(code_points) < 20000:
        c = rng.choice([rng.randrange(0x20, 0x800), rng.randrange(0x800, 0x10000),
                        rng.randrange(0x10000, 0x110000), rng.randrange(0x20, 0x7f)])
        # Assigned characters only: those assigned since Unicode 14 (the
        # version of PCRE2 10.42's tables) have other properties in the
        # reference's newer tables (docs/tokenizers.md).
        if unicodedata.category(chr(c)) not in ("Cn", "Cs"):
            code_points.append(chr(c))
    parts.append("".join(code_points))
    return "\n".join(parts)


def invalid_utf8():
    rng = random.Random(13)
    pieces = [
        b"lone continuation \x80\xbf end", b"truncated \xe4\xbd", b" \xf0\x9f\x99", b" \xc3",
        b"overlong \xc0\xaf \xe0\x80\xaf \xf0\x80\x80\xaf", b"surrogate \xed\xa0\x80\xed\xbf\xbf",
        b"too large \xf4\x90\x80\x80 \xf5\x80 \xff\xfe", b"mixed \xe4\xbd\xa0\xe5\xa5 ok \xe5\xa5\xbd",
        bytes(rng.randrange(256) for _ in range(65536)),
    ]
    return b"\n".join(pieces)


def main():
    out, *tokenizer_dirs = sys.argv[1:]
    os.makedirs(out, exist_ok=True)
    texts = {"multilingual.txt": MULTILINGUAL, "emoji.txt": EMOJI,
             "whitespace.txt": whitespace(), "special.txt": special(tokenizer_dirs),
             "unicode.txt": unicode_text()}
    for name, text in texts.items():
        with open(os.path.join(out, name), "w", encoding="utf-8", newline="") as f:
            f.write(text)
    with open(os.path.join(out, "invalid-utf8.bin"), "wb") as f:
        f.write(invalid_utf8())


if __name__ == "__main__":
    main()
