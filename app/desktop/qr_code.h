#pragma once
// A QR code image (libqrencode), for the pairing code a joining machine shows.
#include <QImage>
#include <QString>

namespace tandem::ui {

// Black modules on white with a 4-module quiet zone, `scale` pixels per module. A null image
// when the text cannot be encoded.
QImage qrCodeImage(const QString& text, int scale = 6);

}  // namespace tandem::ui
