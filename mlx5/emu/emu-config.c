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

static gboolean
apply_key (EmuConfig *cfg, const char *key, const char *value, GError **error)
{
  static const Unit rate_units[] = { { "k", 1000 }, { "m", 1000000 }, { "g", 1000000000 },
    { NULL, 0 } };
  static const Unit freq_units[] = { { "hz", 1 }, { "khz", 1000 }, { "mhz", 1000000 },
    { "ghz", 1000000000 }, { NULL, 0 } };
  const char *n = cfg->name;
  guint64 v;

  if (strcmp (key, "rate") == 0) {
    if (!parse_number (value, rate_units, 1, &v) || v < RATE_MIN || v > RATE_MAX)
      return bad_value (n, key, value, "1m .. 1600g, a number with k, m or g, e.g. 25g", error);
    cfg->rate_bps = v;
    cfg->keys |= EMU_KEY_RATE;
  } else if (strcmp (key, "freq") == 0) {
    /* kHz is the device_frequency_khz unit; Hz values must be whole kHz */
    if (!parse_number (value, freq_units, 1000, &v) || v % 1000 != 0 || v / 1000 < FREQ_MIN_KHZ ||
        v / 1000 > FREQ_MAX_KHZ)
      return bad_value (n, key, value,
          "1mhz .. 10ghz in whole kHz, a number with hz, "
          "khz, mhz or ghz (plain: kHz), e.g. 156250khz",
          error);
    cfg->freq_khz = v / 1000;
    cfg->keys |= EMU_KEY_FREQ;
  } else if (strcmp (key, "mtu") == 0) {
    if (!parse_number (value, rate_units, 1, &v) || v < MTU_MIN || v > MTU_MAX ||
        !g_ascii_isdigit (value[strlen (value) - 1]))
      return bad_value (n, key, value, "68 .. 9978", error);
    cfg->mtu = (guint) v;
    cfg->keys |= EMU_KEY_MTU;
  } else if (strcmp (key, "mac") == 0) {
    if (!parse_mac (value, cfg->mac))
      return bad_value (n, key, value, "six hex bytes, e.g. 02:00:00:00:00:01", error);
    cfg->keys |= EMU_KEY_MAC;
  } else if (strcmp (key, "peer") == 0) {
    if (strcmp (value, "none") == 0) {
      cfg->peer_none = TRUE;
      cfg->peer[0] = '\0';
    } else if (name_valid (value)) {
      cfg->peer_none = FALSE;
      g_strlcpy (cfg->peer, value, sizeof cfg->peer);
    } else {
      return bad_value (n, key, value,
          "a port name of 1..32 of A-Z a-z 0-9 _ . -, "
          "or none",
          error);
    }
    cfg->keys |= EMU_KEY_PEER;
  } else if (strcmp (key, "pause") == 0) {
    if (!parse_bool (value, &cfg->pause))
      return bad_value (n, key, value, "on or off", error);
    cfg->keys |= EMU_KEY_PAUSE;
  } else if (strcmp (key, "clock") == 0) {
    if (strcmp (value, "free") == 0)
      cfg->real_time = FALSE;
    else if (strcmp (value, "rt") == 0)
      cfg->real_time = TRUE;
    else
      return bad_value (n, key, value, "free or rt", error);
    cfg->keys |= EMU_KEY_CLOCK;
  } else if (strcmp (key, "gen") == 0) {
    /* checked against the MTU once every key is known */
    if (!parse_number (value, rate_units, 1, &v) || v < EMU_MIN_FRAME || v > EMU_MAX_FRAME ||
        !g_ascii_isdigit (value[strlen (value) - 1]))
      return bad_value (n, key, value, "a frame length of 60 .. MTU + 18 bytes", error);
    cfg->gen_len = (guint) v;
    cfg->keys |= EMU_KEY_GEN;
  } else if (strcmp (key, "gen-rate") == 0) {
    if (!parse_number (value, rate_units, 1, &v) || v > GEN_RATE_MAX)
      return bad_value (n, key, value,
          "0 (back to back) .. 1g packets/s, a number with "
          "k, m or g, e.g. 10m",
          error);
    cfg->gen_rate = v;
    cfg->keys |= EMU_KEY_GEN_RATE;
  } else if (strcmp (key, "gen-count") == 0) {
    if (!parse_number (value, rate_units, 1, &v))
      return bad_value (n, key, value,
          "0 (endless) or a number of frames, with k, m or "
          "g",
          error);
    cfg->gen_count = v;
    cfg->keys |= EMU_KEY_GEN_COUNT;
  } else if (strcmp (key, "gen-lossless") == 0) {
    if (!parse_bool (value, &cfg->gen_lossless))
      return bad_value (n, key, value, "on or off", error);
    cfg->keys |= EMU_KEY_GEN_LOSSLESS;
  } else if (strcmp (key, "inline") == 0) {
    if (strcmp (value, "none") == 0)
      cfg->inline_l2 = FALSE;
    else if (strcmp (value, "l2") == 0)
      cfg->inline_l2 = TRUE;
    else
      return bad_value (n, key, value, "none or l2", error);
    cfg->keys |= EMU_KEY_INLINE;
  } else if (strcmp (key, "loss") == 0) {
    /* EVERY[+PHASE]: frames PHASE, PHASE + EVERY, ... of those arriving are lost */
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
      return bad_value (n, key, value, "EVERY[+PHASE]: 2 .. 1000000, PHASE < EVERY", error);
    cfg->loss_every = (guint) every;
    cfg->loss_phase = (guint) phase;
    cfg->keys |= EMU_KEY_LOSS;
  } else if (strcmp (key, "overhead") == 0) {
    if (!parse_number (value, rate_units, 1, &v) || v > OVERHEAD_MAX ||
        !g_ascii_isdigit (value[strlen (value) - 1]))
      return bad_value (n, key, value, "0 .. 64 bytes", error);
    cfg->overhead = (guint) v;
    cfg->keys |= EMU_KEY_OVERHEAD;
  } else {
    char *k = g_strescape (key, NULL);
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "emu:%s: unknown key '%s' (allowed: "
        "rate, freq, clock, mtu, mac, peer, pause, overhead, inline, loss); for the generator: gen, "
        "gen-rate, gen-count, gen-lossless",
        n, k);
    g_free (k);
    return FALSE;
  }
  return TRUE;
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

gboolean
emu_config_compatible (const EmuConfig *port, const EmuConfig *other, GError **error)
{
  const char *key = NULL;
  guint32 k = other->keys;

  if ((k & EMU_KEY_RATE) && other->rate_bps != port->rate_bps)
    key = "rate";
  else if ((k & EMU_KEY_FREQ) && other->freq_khz != port->freq_khz)
    key = "freq";
  else if ((k & EMU_KEY_MTU) && other->mtu != port->mtu)
    key = "mtu";
  else if ((k & EMU_KEY_MAC) && memcmp (other->mac, port->mac, 6) != 0)
    key = "mac";
  else if ((k & EMU_KEY_PEER) &&
      (other->peer_none != port->peer_none || strcmp (other->peer, port->peer) != 0))
    key = "peer";
  else if ((k & EMU_KEY_PAUSE) && other->pause != port->pause)
    key = "pause";
  else if ((k & EMU_KEY_CLOCK) && other->real_time != port->real_time)
    key = "clock";
  else if ((k & EMU_KEY_OVERHEAD) && other->overhead != port->overhead)
    key = "overhead";
  else if ((k & EMU_KEY_INLINE) && other->inline_l2 != port->inline_l2)
    key = "inline";
  else if ((k & EMU_KEY_LOSS) &&
      (other->loss_every != port->loss_every || other->loss_phase != port->loss_phase))
    key = "loss";
  else if ((k & EMU_KEY_GEN) && other->gen_len != port->gen_len)
    key = "gen";
  else if ((k & EMU_KEY_GEN_RATE) && other->gen_rate != port->gen_rate)
    key = "gen-rate";
  else if ((k & EMU_KEY_GEN_COUNT) && other->gen_count != port->gen_count)
    key = "gen-count";
  else if ((k & EMU_KEY_GEN_LOSSLESS) && other->gen_lossless != port->gen_lossless)
    key = "gen-lossless";
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
