/* Configuration of an emulated port: "NAME[,KEY=VALUE]..." (syntax in emu.h). */
#include "emu-private.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define RATE_MIN G_GUINT64_CONSTANT (1000000)
#define RATE_MAX G_GUINT64_CONSTANT (1600000000000)
#define FREQ_MIN_KHZ 1000
#define FREQ_MAX_KHZ 10000000
#define MTU_MIN 68
#define MTU_MAX 9978
#define OVERHEAD_MAX 64
#define GEN_RATE_MAX G_GUINT64_CONSTANT (1000000000)

static gboolean
name_char_ok (char c)
{
  return g_ascii_isalnum (c) || c == '_' || c == '.' || c == '-';
}

/* "123" with an optional case-insensitive unit from `units` (NULL-terminated, with
 * their multipliers); plain numbers take `plain`. FALSE if not a number, with an
 * unknown unit, or overflowing. */
typedef struct {
  const char *unit;
  guint64 mult;
} Unit;

static gboolean
parse_number (const char *s, const Unit *units, guint64 plain, guint64 *out)
{
  char *end = NULL;
  if (!g_ascii_isdigit (*s))
    return FALSE;
  errno = 0;
  guint64 v = g_ascii_strtoull (s, &end, 10);
  if (errno != 0)
    return FALSE;
  guint64 mult = plain;
  if (*end != '\0') {
    mult = 0;
    for (const Unit *u = units; u->unit != NULL; u++)
      if (g_ascii_strcasecmp (end, u->unit) == 0)
        mult = u->mult;
    if (mult == 0)
      return FALSE;
  }
  if (v > G_MAXUINT64 / mult)
    return FALSE;
  *out = v * mult;
  return TRUE;
}

/* A plain whole number from `min` to `max`, without a unit. */
static gboolean
parse_count (const char *s, guint min, guint max, guint *out)
{
  static const Unit no_units[] = { { NULL, 0 } };
  guint64 v;
  if (!parse_number (s, no_units, 1, &v) || v < min || v > max)
    return FALSE;
  *out = (guint) v;
  return TRUE;
}

/* One of two words: `off` reads as FALSE, `on` as TRUE. */
static gboolean
parse_choice (const char *s, const char *off, const char *on, gboolean *out)
{
  if (strcmp (s, off) == 0)
    *out = FALSE;
  else if (strcmp (s, on) == 0)
    *out = TRUE;
  else
    return FALSE;
  return TRUE;
}

static gboolean
parse_bool (const char *s, gboolean *out)
{
  static const char *const yes[] = { "on", "1", "yes", "true" };
  static const char *const no[] = { "off", "0", "no", "false" };
  for (guint i = 0; i < G_N_ELEMENTS (yes); i++) {
    if (g_ascii_strcasecmp (s, yes[i]) == 0) {
      *out = TRUE;
      return TRUE;
    }
    if (g_ascii_strcasecmp (s, no[i]) == 0) {
      *out = FALSE;
      return TRUE;
    }
  }
  return FALSE;
}

static gboolean
parse_mac (const char *s, guint8 mac[6])
{
  if (strlen (s) != 17)
    return FALSE;
  for (guint i = 0; i < 6; i++) {
    const char *b = s + (gsize) 3 * i;
    if (!g_ascii_isxdigit (b[0]) || !g_ascii_isxdigit (b[1]) || (i < 5 && b[2] != ':'))
      return FALSE;
    mac[i] = (guint8) (g_ascii_xdigit_value (b[0]) << 4 | g_ascii_xdigit_value (b[1]));
  }
  return TRUE;
}

static gboolean
name_valid (const char *s)
{
  gsize n = strlen (s);
  if (n == 0 || n > EMU_NAME_MAX)
    return FALSE;
  for (gsize i = 0; i < n; i++)
    if (!name_char_ok (s[i]))
      return FALSE;
  return TRUE;
}

static gboolean
bad_value (
    const char *name, const char *key, const char *value, const char *allowed, GError **error)
{
  char *v = g_strescape (value, NULL);
  g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
      "emu:%s: %s=%s is not allowed "
      "(allowed: %s)",
      name, key, v, allowed);
  g_free (v);
  return FALSE;
}

/* EVERY[+PHASE]: frames PHASE, PHASE + EVERY, ... of those arriving are lost */
static gboolean
parse_loss (const char *value, guint *every_out, guint *phase_out)
{
  gchar *plus = strchr (value, '+');
  gchar *end = NULL;
  guint64 every = g_ascii_strtoull (value, &end, 10);
  guint64 phase = 0;
  gboolean ok = end != value && (end == plus || *end == '\0') && every >= 2 && every <= 1000000;
  if (ok && plus != NULL) {
    phase = g_ascii_strtoull (plus + 1, &end, 10);
    ok = end != plus + 1 && *end == '\0' && phase < every;
  }
  if (!ok)
    return FALSE;
  *every_out = (guint) every;
  *phase_out = (guint) phase;
  return TRUE;
}

/* A port name, or none */
static gboolean
parse_peer (const char *value, EmuConfig *cfg)
{
  if (strcmp (value, "none") == 0) {
    cfg->peer_none = TRUE;
    cfg->peer[0] = '\0';
  } else if (name_valid (value)) {
    cfg->peer_none = FALSE;
    g_strlcpy (cfg->peer, value, sizeof cfg->peer);
  } else {
    return FALSE;
  }
  return TRUE;
}

/* The keys of a port's spec, each with what its value may be, in the order a port shared with
 * another spec names the first that differs */
typedef struct {
  const char *key;
  guint32 bit;
  const char *allowed;
} EmuKeyInfo;

static const EmuKeyInfo emu_keys[] = {
  { "rate", EMU_KEY_RATE, "1m .. 1600g, a number with k, m or g, e.g. 25g" },
  { "freq", EMU_KEY_FREQ,
      "1mhz .. 10ghz in whole kHz, a number with hz, "
      "khz, mhz or ghz (plain: kHz), e.g. 156250khz" },
  { "mtu", EMU_KEY_MTU, "68 .. 9978" },
  { "mac", EMU_KEY_MAC, "six hex bytes, e.g. 02:00:00:00:00:01" },
  { "peer", EMU_KEY_PEER,
      "a port name of 1..32 of A-Z a-z 0-9 _ . -, "
      "or none" },
  { "pause", EMU_KEY_PAUSE, "on or off" },
  { "clock", EMU_KEY_CLOCK, "free or rt" },
  { "overhead", EMU_KEY_OVERHEAD, "0 .. 64 bytes" },
  { "inline", EMU_KEY_INLINE, "none or l2" },
  { "loss", EMU_KEY_LOSS, "EVERY[+PHASE]: 2 .. 1000000, PHASE < EVERY" },
  { "gen", EMU_KEY_GEN, "a frame length of 60 .. MTU + 18 bytes" },
  { "gen-rate", EMU_KEY_GEN_RATE,
      "0 (back to back) .. 1g packets/s, a number with "
      "k, m or g, e.g. 10m" },
  { "gen-count", EMU_KEY_GEN_COUNT,
      "0 (endless) or a number of frames, with k, m or "
      "g" },
  { "gen-lossless", EMU_KEY_GEN_LOSSLESS, "on or off" },
};

/* Sets the key's field from `value`; FALSE (the field left as it was) if the value is not
 * allowed. */
static gboolean
parse_key_value (EmuConfig *cfg, guint32 bit, const char *value)
{
  static const Unit rate_units[] = { { "k", 1000 }, { "m", 1000000 }, { "g", 1000000000 },
    { NULL, 0 } };
  static const Unit freq_units[] = { { "hz", 1 }, { "khz", 1000 }, { "mhz", 1000000 },
    { "ghz", 1000000000 }, { NULL, 0 } };
  guint64 v;

  switch (bit) {
    case EMU_KEY_RATE:
      if (!parse_number (value, rate_units, 1, &v) || v < RATE_MIN || v > RATE_MAX)
        return FALSE;
      cfg->rate_bps = v;
      return TRUE;
    case EMU_KEY_FREQ:
      /* kHz is the device_frequency_khz unit; Hz values must be whole kHz */
      if (!parse_number (value, freq_units, 1000, &v) || v % 1000 != 0 || v / 1000 < FREQ_MIN_KHZ ||
          v / 1000 > FREQ_MAX_KHZ)
        return FALSE;
      cfg->freq_khz = v / 1000;
      return TRUE;
    case EMU_KEY_MTU: return parse_count (value, MTU_MIN, MTU_MAX, &cfg->mtu);
    case EMU_KEY_MAC: return parse_mac (value, cfg->mac);
    case EMU_KEY_PEER: return parse_peer (value, cfg);
    case EMU_KEY_PAUSE: return parse_bool (value, &cfg->pause);
    case EMU_KEY_CLOCK: return parse_choice (value, "free", "rt", &cfg->real_time);
    case EMU_KEY_GEN:
      /* checked against the MTU once every key is known */
      return parse_count (value, EMU_MIN_FRAME, EMU_MAX_FRAME, &cfg->gen_len);
    case EMU_KEY_GEN_RATE:
      if (!parse_number (value, rate_units, 1, &v) || v > GEN_RATE_MAX)
        return FALSE;
      cfg->gen_rate = v;
      return TRUE;
    case EMU_KEY_GEN_COUNT: return parse_number (value, rate_units, 1, &cfg->gen_count);
    case EMU_KEY_GEN_LOSSLESS: return parse_bool (value, &cfg->gen_lossless);
    case EMU_KEY_INLINE: return parse_choice (value, "none", "l2", &cfg->inline_l2);
    case EMU_KEY_LOSS: return parse_loss (value, &cfg->loss_every, &cfg->loss_phase);
    case EMU_KEY_OVERHEAD: return parse_count (value, 0, OVERHEAD_MAX, &cfg->overhead);
    default: g_return_val_if_reached (FALSE);
  }
}

static gboolean
apply_key (EmuConfig *cfg, const char *key, const char *value, GError **error)
{
  for (guint i = 0; i < G_N_ELEMENTS (emu_keys); i++) {
    const EmuKeyInfo *k = &emu_keys[i];
    if (strcmp (key, k->key) != 0)
      continue;
    if (!parse_key_value (cfg, k->bit, value))
      return bad_value (cfg->name, key, value, k->allowed, error);
    cfg->keys |= k->bit;
    return TRUE;
  }
  char *k = g_strescape (key, NULL);
  g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
      "emu:%s: unknown key '%s' (allowed: "
      "rate, freq, clock, mtu, mac, peer, pause, overhead, inline, loss); for the generator: gen, "
      "gen-rate, gen-count, gen-lossless",
      cfg->name, k);
  g_free (k);
  return FALSE;
}

/* TRUE when parts[1 .. i-1] (already cut at their '=': keys only) hold parts[i]'s key */
static gboolean
key_given_before (char **parts, guint i)
{
  for (guint j = 1; j < i; j++)
    if (strcmp (parts[j], parts[i]) == 0)
      return TRUE;
  return FALSE;
}

gboolean
emu_config_parse (const char *spec, EmuConfig *cfg, GError **error)
{
  memset (cfg, 0, sizeof *cfg);
  char **parts = g_strsplit (spec, ",", -1);
  gboolean ok = FALSE;

  if (parts[0] == NULL || !name_valid (parts[0])) {
    char *s = g_strescape (spec, NULL);
    g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE,
        "emu:%s: the port name must be 1..%u "
        "of A-Z a-z 0-9 _ . - (e.g. emu:loop0)",
        s, EMU_NAME_MAX);
    g_free (s);
    goto out;
  }
  g_strlcpy (cfg->name, parts[0], sizeof cfg->name);
  cfg->rate_bps = EMU_DEFAULT_RATE;
  cfg->freq_khz = EMU_DEFAULT_FREQ_KHZ;
  cfg->mtu = EMU_DEFAULT_MTU;
  cfg->pause = TRUE;
  cfg->overhead = EMU_DEFAULT_OVERHEAD;
  /* a locally administered unicast address derived from the name */
  guint32 h = g_str_hash (cfg->name);
  cfg->mac[0] = 0x02;
  cfg->mac[3] = (guint8) (h >> 16);
  cfg->mac[4] = (guint8) (h >> 8);
  cfg->mac[5] = (guint8) h;

  for (guint i = 1; parts[i] != NULL; i++) {
    char *eq = strchr (parts[i], '=');
    if (eq == NULL || eq == parts[i]) {
      char *s = g_strescape (parts[i], NULL);
      g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG, "emu:%s: '%s' is not KEY=VALUE", cfg->name, s);
      g_free (s);
      goto out;
    }
    *eq = '\0';
    if (!apply_key (cfg, parts[i], eq + 1, error))
      goto out;
    /* a known key (apply_key refuses the others): plain characters */
    if (key_given_before (parts, i)) {
      char *s = g_strescape (spec, NULL);
      g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
          "emu:%s: the key '%s' is given twice "
          "in emu:%s (allowed: each key once)",
          cfg->name, parts[i], s);
      g_free (s);
      goto out;
    }
  }
  if ((cfg->keys & (EMU_KEY_GEN_RATE | EMU_KEY_GEN_COUNT | EMU_KEY_GEN_LOSSLESS)) &&
      cfg->gen_len == 0) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "emu:%s: gen-rate, gen-count and "
        "gen-lossless shape the generator: give its frame length too (gen=60 .. %u)",
        cfg->name, cfg->mtu + 18);
    goto out;
  }
  if (cfg->gen_len > cfg->mtu + 18) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "emu:%s: gen=%u is not allowed "
        "(allowed: a frame length of 60 .. %u, MTU + 18)",
        cfg->name, cfg->gen_len, cfg->mtu + 18);
    goto out;
  }
  if (cfg->real_time && cfg->freq_khz != 1000000) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "emu:%s: clock=rt counts ns: it needs "
        "freq=1ghz (allowed: clock=free with freq=%" G_GUINT64_FORMAT "khz)",
        cfg->name, cfg->freq_khz);
    goto out;
  }
  ok = TRUE;
out:
  g_strfreev (parts);
  return ok;
}

/* TRUE when the two configurations set the key's field apart */
static gboolean
key_differs (const EmuConfig *a, const EmuConfig *b, guint32 bit)
{
  switch (bit) {
    case EMU_KEY_RATE: return a->rate_bps != b->rate_bps;
    case EMU_KEY_FREQ: return a->freq_khz != b->freq_khz;
    case EMU_KEY_MTU: return a->mtu != b->mtu;
    case EMU_KEY_MAC: return memcmp (a->mac, b->mac, 6) != 0;
    case EMU_KEY_PEER: return a->peer_none != b->peer_none || strcmp (a->peer, b->peer) != 0;
    case EMU_KEY_PAUSE: return a->pause != b->pause;
    case EMU_KEY_CLOCK: return a->real_time != b->real_time;
    case EMU_KEY_OVERHEAD: return a->overhead != b->overhead;
    case EMU_KEY_INLINE: return a->inline_l2 != b->inline_l2;
    case EMU_KEY_LOSS: return a->loss_every != b->loss_every || a->loss_phase != b->loss_phase;
    case EMU_KEY_GEN: return a->gen_len != b->gen_len;
    case EMU_KEY_GEN_RATE: return a->gen_rate != b->gen_rate;
    case EMU_KEY_GEN_COUNT: return a->gen_count != b->gen_count;
    case EMU_KEY_GEN_LOSSLESS: return a->gen_lossless != b->gen_lossless;
    default: g_return_val_if_reached (FALSE);
  }
}

gboolean
emu_config_compatible (const EmuConfig *port, const EmuConfig *other, GError **error)
{
  const char *key = NULL;

  for (guint i = 0; i < G_N_ELEMENTS (emu_keys) && key == NULL; i++)
    if ((other->keys & emu_keys[i].bit) && key_differs (port, other, emu_keys[i].bit))
      key = emu_keys[i].key;
  if (key == NULL)
    return TRUE;
  g_set_error (error, DQ_ERROR, DQ_ERROR_BUSY,
      "emu:%s is already open with another %s "
      "(rate=%" G_GUINT64_FORMAT " freq=%" G_GUINT64_FORMAT "khz mtu=%u peer=%s pause=%s "
      "clock=%s overhead=%u); leave %s out to share it",
      port->name, key, port->rate_bps, port->freq_khz, port->mtu,
      port->peer_none     ? "none"
          : port->peer[0] ? port->peer
                          : port->name,
      port->pause ? "on" : "off", port->real_time ? "rt" : "free", port->overhead, key);
  return FALSE;
}
