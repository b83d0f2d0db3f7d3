"""Makes the spoken-digits corpus of the bundled digits-ctc model.

Digit strings ("three one four"), one to five digits each, spoken by
espeak-ng (Debian package espeak-ng) with varied voices, voice variants,
speeds and pitches, resampled to 16 kHz, encoded as Ogg Vorbis and written
the way RETURNN's OggZipDataset reads a corpus: NAME.zip holding NAME.txt (a
Python list of {"file", "seq_name", "text", "duration"}) and NAME/<file>.ogg.
The dev set's voices and variants are held out from training (other speakers
in effect). Also writes digits.vocab (RETURNN's Vocabulary file: word -> index).

Deterministic: the same arguments give the same bytes (seeded choices,
espeak-ng and Vorbis are deterministic, each Ogg stream gets a fixed serial
number, zip entries have a fixed date).
Written to temporary names and renamed, so an interrupted run leaves no corpus.

    python tools/make_digits.py OUT_DIR [--train N] [--dev N] [--seed S]
"""

import argparse
import io
import os
import random
import subprocess
import sys
import zipfile

DIGITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
TRAIN_VOICES = ["en-us", "en-gb", "en-gb-x-rp", "en-029"]
TRAIN_VARIANTS = ["m1", "m2", "m3", "m4", "f1", "f2", "f3"]
DEV_VOICES = ["en-gb-scotland", "en-gb-x-gbclan"]
DEV_VARIANTS = ["m5", "f4"]
SAMPLE_RATE = 16000
ZIP_DATE = (2026, 1, 1, 0, 0, 0)


def synthesize(text, voice, speed, pitch):
    """espeak-ng's WAV for `text`, as float32 samples at SAMPLE_RATE."""
    import numpy
    import soundfile
    import soxr

    wav = subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-p", str(pitch), "--stdout", text],
                         check=True, capture_output=True).stdout
    audio, rate = soundfile.read(io.BytesIO(wav), dtype="float32")
    if audio.ndim > 1:
        audio = audio.mean(axis=1)
    return numpy.asarray(soxr.resample(audio, rate, SAMPLE_RATE), dtype="float32")


def _ogg_crc_table():
    table = []
    for i in range(256):
        r = i << 24
        for _ in range(8):
            r = ((r << 1) ^ 0x04C11DB7) if r & 0x80000000 else (r << 1)
        table.append(r & 0xFFFFFFFF)
    return table


_OGG_CRC = _ogg_crc_table()


def fixed_serial(ogg, serial):
    """`ogg` with the stream serial number `serial` on every page (libsndfile draws it at
    random) and the pages' checksums recomputed: the same audio gives the same bytes."""
    data = bytearray(ogg)
    pos = 0
    while pos < len(data):
        assert data[pos:pos + 4] == b"OggS", "not an Ogg page at %d" % pos
        n_segments = data[pos + 26]
        size = 27 + n_segments + sum(data[pos + 27:pos + 27 + n_segments])
        data[pos + 14:pos + 18] = serial.to_bytes(4, "little")
        data[pos + 22:pos + 26] = b"\0\0\0\0"
        crc = 0
        for byte in data[pos:pos + size]:
            crc = ((crc << 8) & 0xFFFFFFFF) ^ _OGG_CRC[((crc >> 24) & 0xFF) ^ byte]
        data[pos + 22:pos + 26] = crc.to_bytes(4, "little")
        pos += size
    return bytes(data)


def write_part(out_dir, name, count, voices, variants, rng, log_every):
    import soundfile

    entries = []
    path = os.path.join(out_dir, name + ".zip")
    tmp = path + ".tmp-%d" % os.getpid()
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as z:
        for i in range(count):
            text = " ".join(rng.choice(DIGITS) for _ in range(rng.randint(1, 5)))
            voice = "%s+%s" % (rng.choice(voices), rng.choice(variants))
            speed, pitch = rng.randint(130, 190), rng.randint(30, 70)
            audio = synthesize(text, voice, speed, pitch)
            buf = io.BytesIO()
            soundfile.write(buf, audio, SAMPLE_RATE, format="OGG", subtype="VORBIS")
            file = "%s-%05d.ogg" % (name, i)
            z.writestr(zipfile.ZipInfo("%s/%s" % (name, file), ZIP_DATE), fixed_serial(buf.getvalue(), i + 1))
            entries.append({"file": file, "seq_name": "%s/%05d/%s" % (name, i, voice), "text": text,
                            "duration": round(len(audio) / SAMPLE_RATE, 4)})
            if log_every and (i + 1) % log_every == 0:
                print("make_digits: %s: %d of %d utterances" % (name, i + 1, count), flush=True)
        listing = "[\n" + "".join("%r,\n" % (e,) for e in entries) + "]\n"
        z.writestr(zipfile.ZipInfo(name + ".txt", ZIP_DATE), listing)
    os.replace(tmp, path)
    hours = sum(e["duration"] for e in entries) / 3600
    print("make_digits: %s: %d utterances, %.2f hours, voices %s x variants %s" % (
        path, count, hours, voices, variants), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--train", type=int, default=3000, help="training utterances (default 3000)")
    ap.add_argument("--dev", type=int, default=200, help="dev utterances, held-out voices (default 200)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    vocab = os.path.join(args.out_dir, "digits.vocab")
    with open(vocab + ".tmp", "w") as f:
        f.write(repr({d: i for i, d in enumerate(DIGITS)}) + "\n")
    os.replace(vocab + ".tmp", vocab)
    rng = random.Random(args.seed)
    write_part(args.out_dir, "train", args.train, TRAIN_VOICES, TRAIN_VARIANTS, rng, 500)
    write_part(args.out_dir, "dev", args.dev, DEV_VOICES, DEV_VARIANTS, rng, 0)


if __name__ == "__main__":
    sys.exit(main())
