#include "qr_code.h"

#include <qrencode.h>

#include <memory>

namespace tandem::ui {

QImage qrCodeImage(const QString& text, int scale) {
    const QByteArray utf8 = text.toUtf8();
    std::unique_ptr<QRcode, void (*)(QRcode*)> code(
        QRcode_encodeString(utf8.constData(), 0, QR_ECLEVEL_M, QR_MODE_8, 1), QRcode_free);
    if (!code) return {};
    const int quiet = 4, n = code->width, side = (n + 2 * quiet) * scale;
    QImage img(side, side, QImage::Format_RGB32);
    img.fill(Qt::white);
    for (int y = 0; y < n; ++y)
        for (int x = 0; x < n; ++x) {
            if (!(code->data[y * n + x] & 1)) continue;  // bit 0: a dark module
            for (int dy = 0; dy < scale; ++dy)
                for (int dx = 0; dx < scale; ++dx)
                    img.setPixel((x + quiet) * scale + dx, (y + quiet) * scale + dy, 0xff000000);
        }
    return img;
}

}  // namespace tandem::ui
